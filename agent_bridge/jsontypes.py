"""Names for JSON whose shape belongs to someone else: what an agent sends, what a
client sends before it is checked. The value is ``Any`` on purpose (any JSON value);
code narrows it (``isinstance``) before relying on a shape. Shapes this project owns are
TypedDicts or msgspec Structs instead (``server.contents``, ``server.shapes``,
``agent_bridge.acp_types``).

``store`` has the same two names (``store.jsontypes``): the leaf packages import neither
each other nor ``server``."""

from typing import Any, TypeAlias

__all__ = ["JsonObject", "JsonValue"]

JsonValue: TypeAlias = Any  # any JSON value from outside: object, array, string, number, …
JsonObject: TypeAlias = dict[str, JsonValue]  # a JSON object from outside, fields unchecked
