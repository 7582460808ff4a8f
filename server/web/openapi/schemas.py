"""The component schemas of the OpenAPI document (``#/components/schemas``) and the
enums and small builders they are made of."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from agent_bridge.jsontypes import JsonObject
from server import shapes

__all__ = [
    "INT64_MAX",
    "MESSAGE_TYPES",
    "NONBLANK",
    "ROLES",
    "RUN_STATUSES",
    "SCHEMAS",
    "SESSION_STATUSES",
    "TIME",
    "TOOL_STATUSES",
    "UUID",
    "VERSION",
    "Schema",
    "closed",
    "nullable",
    "obj",
    "ref",
]

Schema = JsonObject  # a JSON Schema (or OpenAPI) object: JSON of any shape we compose

VERSION = "0.1.0"
INT64_MAX = 2**63 - 1

# A string the server does not consider blank: Python's str.strip() also strips
# \x1c-\x1f and \x85, which JSON Schema's \s does not cover.
NONBLANK = {"type": "string", "pattern": "[^\\s\\x1c-\\x1f\\x85]"}
UUID: Schema = {"type": "string", "format": "uuid"}
TIME: Schema = {"type": "string", "format": "date-time"}
SESSION_STATUSES = list(shapes.SESSION_STATUSES)
RUN_STATUSES = list(shapes.RUN_STATUSES)
TOOL_STATUSES = list(shapes.TOOL_STATUSES)
ROLES = list(shapes.ROLES)
MESSAGE_TYPES = list(shapes.MESSAGE_TYPES)
ISOLATIONS = list(shapes.ISOLATIONS)
ENUMS = (SESSION_STATUSES, RUN_STATUSES, TOOL_STATUSES, ROLES, MESSAGE_TYPES, ISOLATIONS)


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def obj(required: Iterable[str] = (), **properties: Schema) -> Schema:
    return {"type": "object", "properties": properties, "required": list(required)}


def closed(required: Iterable[str] = (), **properties: Schema) -> Schema:
    return {**obj(required, **properties), "additionalProperties": False}


def _generated() -> dict[str, Schema]:
    """The resources' components from ``server.shapes``: msgspec's JSON Schema, with the
    document's conventions (no titles; enums in their declared order; ``forkedFrom``
    inline; message content and cost by reference to their hand-written components)."""
    _, found = msgspec.json.schema_components(
        (shapes.Repo, shapes.Session, shapes.Message, shapes.Run, shapes.ToolCall),
        ref_template="#/components/schemas/{name}",
    )
    found["Workspace"].pop("description")
    inline = found.pop("ForkedFrom")
    inline.pop("title")
    for schema in found.values():
        schema.pop("title", None)
        schema.pop("description", None)
        for prop in schema["properties"].values():
            for option in prop.get("anyOf", [prop]):
                if option.get("$ref", "").endswith("/ForkedFrom"):
                    option.clear()
                    option.update(inline)
            if "enum" in prop:
                prop["enum"] = next(e for e in ENUMS if sorted(e) == sorted(prop["enum"]))
    found["Message"]["properties"]["content"] = ref("MessageContent")
    found["Run"]["properties"]["cost"] = ref("Cost")
    return found


GENERATED = _generated()

SCHEMAS: dict[str, Schema] = {
    "Error": closed(
        ["error"],
        error=closed(
            ["code", "message", "details"],
            code={"type": "string", "description": "A machine word, e.g. session_limit_reached."},
            message={"type": "string", "minLength": 1, "description": "A sentence for people."},
            details={
                "type": "object",
                "description": "Facts about the error; a 500 has requestId.",
            },
        ),
    ),
    "Repo": GENERATED["Repo"],
    "Agent": closed(
        ["id", "command", "default"],
        id={"type": "string"},
        command={"type": "string"},
        default={"type": "boolean"},
    ),
    "Session": GENERATED["Session"],
    "MessageContent": {
        **obj(["type"], type={"enum": MESSAGE_TYPES}),
        "description": "Typed content; its fields per type are listed in API.md, Messages.",
    },
    "Message": GENERATED["Message"],
    "Cost": nullable(
        obj(
            ["amount", "currency"], amount={"type": "number"}, currency=nullable({"type": "string"})
        )
    ),
    "Run": GENERATED["Run"],
    "ToolCall": GENERATED["ToolCall"],
    "TranscriptEntry": obj(
        ["role", "content"],
        role={"enum": ["system", "user", "assistant", "tool"]},
        content={"type": "string"},
        toolCalls={
            "type": "array",
            "items": obj(
                ["id", "name", "arguments"],
                id={"type": "string"},
                name={"type": "string"},
                arguments={},
            ),
        },
        toolCallId={"type": "string"},
    ),
    "Workspace": GENERATED["Workspace"],
    "Merged": GENERATED["Merged"],
}
