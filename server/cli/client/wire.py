"""Names for the JSON this client sends and receives over HTTP and the WebSocket. The
client imports nothing from the server (it speaks only the API of API.md), so it checks
what it reads where it reads it: the values are ``Any`` on purpose (any JSON value)."""

from __future__ import annotations

from typing import Any, TypeAlias

__all__ = ["JsonObject", "JsonValue"]

JsonValue: TypeAlias = Any  # any JSON value the server sent
JsonObject: TypeAlias = dict[str, JsonValue]  # a JSON object (a resource, a frame, a body)
