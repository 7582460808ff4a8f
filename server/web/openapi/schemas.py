"""The component schemas of the OpenAPI document (``#/components/schemas``) and the
enums and small builders they are made of."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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

Schema = dict[str, Any]

VERSION = "0.1.0"
INT64_MAX = 2**63 - 1

# A string the server does not consider blank: Python's str.strip() also strips
# \x1c-\x1f and \x85, which JSON Schema's \s does not cover.
NONBLANK = {"type": "string", "pattern": "[^\\s\\x1c-\\x1f\\x85]"}
UUID: Schema = {"type": "string", "format": "uuid"}
TIME: Schema = {"type": "string", "format": "date-time"}
SESSION_STATUSES = ["active", "completed", "cancelled", "error"]
RUN_STATUSES = ["running", "completed", "failed", "cancelled", "paused", "interrupted"]
TOOL_STATUSES = ["pending", "in_progress", "completed", "error", "cancelled"]
ROLES = ["user", "agent", "system"]
MESSAGE_TYPES = [
    "text",
    "thought",
    "plan",
    "tool",
    "permission",
    "status",
    "run",
    "usage",
    "update",
]


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def obj(required: Iterable[str] = (), **properties: Schema) -> Schema:
    return {"type": "object", "properties": properties, "required": list(required)}


def closed(required: Iterable[str] = (), **properties: Schema) -> Schema:
    return {**obj(required, **properties), "additionalProperties": False}


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
    "Repo": closed(
        ["id", "name", "path", "isGitRepo", "createdAt"],
        id=UUID,
        name={"type": "string"},
        path={"type": "string"},
        isGitRepo={"type": "boolean"},
        createdAt=TIME,
    ),
    "Agent": closed(
        ["id", "command", "default"],
        id={"type": "string"},
        command={"type": "string"},
        default={"type": "boolean"},
    ),
    "Session": obj(
        [
            "id",
            "repoId",
            "repo",
            "agentId",
            "status",
            "title",
            "createdAt",
            "updatedAt",
            "lastSeq",
            "activeRunId",
            "parentRunId",
            "forkedFrom",
            "metadata",
        ],
        id=UUID,
        repoId=UUID,
        repo=ref("Repo"),
        agentId={"type": "string"},
        status={"enum": SESSION_STATUSES},
        title=nullable({"type": "string"}),
        createdAt=TIME,
        updatedAt=TIME,
        lastSeq={"type": "integer", "minimum": 0},
        activeRunId=nullable(UUID),
        parentRunId=nullable(UUID),
        forkedFrom=nullable(
            closed(["sessionId", "seq"], sessionId=UUID, seq={"type": "integer", "minimum": 0})
        ),
        metadata={"type": "object"},
    ),
    "MessageContent": {
        **obj(["type"], type={"enum": MESSAGE_TYPES}),
        "description": "Typed content; its fields per type are listed in API.md, Messages.",
    },
    "Message": obj(
        ["id", "sessionId", "runId", "seq", "role", "content", "stepNumber", "timestamp"],
        id=UUID,
        sessionId=UUID,
        runId=nullable(UUID),
        seq={"type": "integer", "minimum": 1},
        role={"enum": ROLES},
        content=ref("MessageContent"),
        stepNumber=nullable({"type": "integer"}),
        timestamp=TIME,
        raw={"description": "The raw ACP frame (only with raw=true and on single messages)."},
        dropped={
            "type": "boolean",
            "description": "Dropped by a rewind (only with the raw frame).",
        },
    ),
    "Cost": nullable(
        obj(
            ["amount", "currency"], amount={"type": "number"}, currency=nullable({"type": "string"})
        )
    ),
    "Run": obj(
        [
            "id",
            "sessionId",
            "repoId",
            "agentId",
            "status",
            "stopReason",
            "stepCount",
            "maxSteps",
            "parentRunId",
            "resumedFrom",
            "summary",
            "errorMessage",
            "usage",
            "cost",
            "durationMs",
            "createdAt",
            "completedAt",
        ],
        id=UUID,
        sessionId=UUID,
        repoId=UUID,
        agentId={"type": "string"},
        status={"enum": RUN_STATUSES},
        stopReason=nullable({"type": "string"}),
        stepCount={"type": "integer", "minimum": 0},
        maxSteps={"type": "integer", "minimum": 0},
        parentRunId=nullable(UUID),
        resumedFrom=nullable(UUID),
        summary=nullable({"type": "string"}),
        errorMessage=nullable({"type": "string"}),
        usage=nullable({"type": "object"}),
        cost=ref("Cost"),
        durationMs=nullable({"type": "integer"}),
        createdAt=TIME,
        completedAt=nullable(TIME),
    ),
    "ToolCall": obj(
        [
            "id",
            "runId",
            "messageId",
            "toolCallId",
            "toolName",
            "kind",
            "input",
            "output",
            "status",
            "durationMs",
            "stepNumber",
            "createdAt",
            "completedAt",
        ],
        id=UUID,
        runId=UUID,
        messageId=nullable(UUID),
        toolCallId={"type": "string"},
        toolName=nullable({"type": "string"}),
        kind=nullable({"type": "string"}),
        input={},
        output={},
        status={"enum": TOOL_STATUSES},
        durationMs=nullable({"type": "integer"}),
        stepNumber=nullable({"type": "integer"}),
        createdAt=TIME,
        completedAt=nullable(TIME),
    ),
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
}
