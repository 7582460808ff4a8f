"""Operations on sessions: CRUD, prompt, cancel, messages, permissions, history."""

from __future__ import annotations

from server import shapes
from server.web.openapi.parts import (
    CURSOR,
    PAGE,
    SESSION,
    SESSION_VIEW,
    body_schema,
    int_param,
    json_response,
    list_param,
    op,
    optional,
    path_param,
    query,
    request_body,
)
from server.web.openapi.schemas import (
    INT64_MAX,
    MESSAGE_TYPES,
    ROLES,
    SESSION_STATUSES,
    TIME,
    UUID,
    Schema,
    closed,
    nullable,
    obj,
    ref,
)

__all__ = ["SESSIONS"]

SESSIONS: dict[tuple[str, str], Schema] = {
    # -- sessions ----------------------------------------------------------------------
    ("GET", "/api/sessions"): op(
        "List sessions, newest first",
        {
            200: json_response(
                "A page.",
                obj(
                    ["sessions", "total", "limit", "offset", "nextCursor"],
                    sessions={"type": "array", "items": ref("Session")},
                    total={"type": "integer", "minimum": 0},
                    limit={"type": "integer"},
                    offset={"type": "integer"},
                    **PAGE,
                ),
            )
        },
        params=[
            query("repoId", optional(UUID)),
            list_param("status", SESSION_STATUSES, "Any of these statuses."),
            query("agentId", {"type": "string"}),
            query("owner", {"type": "string"}, "me, or a user id: that owner's sessions."),
            int_param("limit", 1, 200),
            int_param("offset", 0, INT64_MAX),
            CURSOR,
        ],
        errors=[422],
    ),
    ("POST", "/api/sessions"): op(
        "Create a session (starts its agent)",
        {
            201: json_response(
                "Active: the agent answered initialize and session/new.", ref("Session")
            )
        },
        body=request_body(body_schema(shapes.CreateSession)),
        errors=[403, 404, 429, 502, 503],
    ),
    ("GET", "/api/sessions/{sessionId}"): op(
        "A session with its finished messages",
        {
            200: json_response(
                "The session.",
                {
                    "allOf": [
                        ref("Session"),
                        obj(["messages"], messages={"type": "array", "items": ref("Message")}),
                    ]
                },
            )
        },
        params=[SESSION],
    ),
    ("DELETE", "/api/sessions/{sessionId}"): op(
        "Cancel a session: stop its turn and agent",
        {200: SESSION_VIEW},
        params=[SESSION],
        errors=[409, 503],
    ),
    ("POST", "/api/sessions/{sessionId}/prompt"): op(
        "Start a turn",
        {
            202: json_response(
                "Accepted; the user message is stored.",
                closed(["runId", "sessionId"], runId=UUID, sessionId=UUID),
            )
        },
        params=[SESSION],
        body=request_body(body_schema(shapes.PromptBody)),
        errors=[409, 502, 503],
    ),
    ("POST", "/api/sessions/{sessionId}/cancel"): op(
        "Cancel the running turn",
        {202: json_response("Cancelling.", closed(["sessionId"], sessionId=UUID))},
        params=[SESSION],
        errors=[409, 503],
    ),
    ("POST", "/api/sessions/{sessionId}/complete"): op(
        "Complete a session", {200: SESSION_VIEW}, params=[SESSION], errors=[409, 503]
    ),
    ("GET", "/api/sessions/{sessionId}/messages"): op(
        "Messages after a seq",
        {
            200: json_response(
                "In seq order.",
                closed(
                    ["messages", "nextAfter"],
                    messages={"type": "array", "items": ref("Message")},
                    nextAfter=nullable({"type": "integer"}),
                ),
            )
        },
        params=[
            SESSION,
            int_param("after", 0, INT64_MAX),
            query("since", optional(TIME)),
            int_param("limit", 1, 5000),
            query("role", optional({"enum": ROLES}), "One value; a list is refused (422)."),
            query("type", optional({"enum": MESSAGE_TYPES}), "One value; a list is refused."),
            query("partial", {"type": "boolean"}),
            query("raw", {"type": "boolean"}),
        ],
    ),
    ("POST", "/api/sessions/{sessionId}/permissions/{requestId}"): op(
        "Answer a permission request (the first answer wins)",
        {
            200: json_response(
                "Decided.",
                closed(
                    ["requestId", "outcome"],
                    requestId=UUID,
                    outcome=closed(
                        ["outcome", "optionId"],
                        outcome={"const": "selected"},
                        optionId={"type": "string"},
                    ),
                ),
            )
        },
        params=[SESSION, path_param("requestId", "The requestId of a permission message.")],
        body=request_body(body_schema(shapes.PermissionAnswer)),
        errors=[409, 503],
    ),
    # -- history -----------------------------------------------------------------------
    ("GET", "/api/sessions/{sessionId}/transcript"): op(
        "The conversation in an LLM chat API's shape",
        {
            200: json_response(
                "The transcript.",
                closed(["messages"], messages={"type": "array", "items": ref("TranscriptEntry")}),
            )
        },
        params=[SESSION, int_param("uptoSeq", 0, INT64_MAX)],
    ),
    ("POST", "/api/sessions/{sessionId}/fork"): op(
        "Copy a session up to a seq",
        {201: json_response("The new session.", ref("Session"))},
        params=[SESSION],
        body=request_body(body_schema(shapes.ForkBody), required=False),
        errors=[409, 429, 502, 503],
    ),
    ("POST", "/api/sessions/{sessionId}/rewind"): op(
        "Drop the messages after a seq",
        {200: SESSION_VIEW},
        params=[SESSION],
        body=request_body(body_schema(shapes.RewindBody)),
        errors=[409, 503],
    ),
    ("GET", "/api/sessions/{sessionId}/export"): op(
        "Every stored message as NDJSON",
        {
            200: {
                "description": "One JSON object per line.",
                "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
            }
        },
        params=[SESSION],
    ),
    ("POST", "/api/sessions/import"): op(
        "Import an exported session",
        {201: json_response("The imported session (completed).", ref("Session"))},
        params=[query("repoId", optional(UUID)), query("agentId", {"type": "string"})],
        body=request_body(
            {"type": "string", "description": "An export: one JSON object per line."},
            media="application/x-ndjson",
        ),
        errors=[400, 404, 422, 429],
    ),
}
