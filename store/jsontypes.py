"""Names for JSON the store keeps without knowing its shape (message contents, raw ACP
frames, usage and cost as the agent reported them): the shapes are the server's
(``server.contents``), the store only reads and writes them. The value is ``Any`` on
purpose (any JSON value). ``agent_bridge.jsontypes`` has the same two names: the leaf
packages import neither each other nor ``server``."""

from __future__ import annotations

from typing import Any, TypeAlias

__all__ = ["JsonObject", "JsonValue"]

JsonValue: TypeAlias = Any  # any JSON value, as stored
JsonObject: TypeAlias = dict[str, JsonValue]  # a stored JSON object
