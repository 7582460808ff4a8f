"""Operations on runs, and the WebSocket stream."""

from __future__ import annotations

from server import shapes
from server.web.openapi.parts import (
    CURSOR,
    PAGE,
    RUN,
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
    RUN_STATUSES,
    TOOL_STATUSES,
    UUID,
    Schema,
    closed,
    ref,
)

__all__ = ["RUNS"]

RUNS: dict[tuple[str, str], Schema] = {
    # -- runs --------------------------------------------------------------------------
    ("GET", "/api/agent-runs"): op(
        "List runs, newest first",
        {
            200: json_response(
                "A page.",
                closed(["data", "nextCursor"], data={"type": "array", "items": ref("Run")}, **PAGE),
            )
        },
        params=[
            query("repoId", optional(UUID)),
            query("sessionId", optional(UUID)),
            list_param("status", RUN_STATUSES, "Any of these."),
            query("agentId", {"type": "string"}),
            query("parentRunId", optional(UUID)),
            int_param("limit", 1, 200),
            CURSOR,
        ],
        errors=[422],
    ),
    ("GET", "/api/agent-runs/{runId}"): op(
        "A run", {200: json_response("The run.", ref("Run"))}, params=[RUN]
    ),
    ("GET", "/api/agent-runs/{runId}/messages"): op(
        "A run's messages",
        {
            200: json_response(
                "In seq order.",
                closed(
                    ["data", "nextCursor"],
                    data={"type": "array", "items": ref("Message")},
                    **PAGE,
                ),
            )
        },
        params=[RUN, int_param("limit", 1, 1000), CURSOR, query("partial", {"type": "boolean"})],
    ),
    ("GET", "/api/agent-runs/{runId}/messages/{messageId}"): op(
        "One message of a run, with its raw frame",
        {200: json_response("The message.", ref("Message"))},
        params=[RUN, path_param("messageId", "A message id.")],
    ),
    ("GET", "/api/agent-runs/{runId}/tool-calls"): op(
        "A run's tool calls",
        {
            200: json_response(
                "In step order.",
                closed(
                    ["data", "nextCursor"],
                    data={"type": "array", "items": ref("ToolCall")},
                    **PAGE,
                ),
            )
        },
        params=[
            RUN,
            query("toolName", {"type": "string"}),
            list_param("status", TOOL_STATUSES, "Any of these."),
            int_param("limit", 1, 500),
            CURSOR,
        ],
    ),
    ("GET", "/api/agent-runs/{runId}/tool-calls/{callId}"): op(
        "One tool call",
        {200: json_response("The tool call.", ref("ToolCall"))},
        params=[RUN, path_param("callId", "A tool call id.")],
    ),
    ("POST", "/api/agent-runs/{runId}/resume"): op(
        "Resume a paused or interrupted run",
        {202: json_response("The new run.", ref("Run"))},
        params=[RUN],
        body=request_body(
            body_schema(shapes.ResumeBody),
            required=False,
        ),
        errors=[409, 502, 503],
    ),
    # -- the stream --------------------------------------------------------------------
    ("GET", "/ws/sessions/{sessionId}"): op(
        "The session's WebSocket stream",
        {
            101: {
                "description": "Switching to the WebSocket protocol. Refusals close after "
                "the handshake: 4401 "
                "unauthorized, 4403 forbidden origin, 4404 unknown session; later 4008 (too "
                "far behind), 1009 (a "
                "frame over MAX_WS_MESSAGE_BYTES; a prompt frame may hold an image at "
                "MAX_IMAGE_BYTES besides its text), 1001 (shutting down). Frames: API.md, "
                "WebSocket stream."
            }
        },
        params=[
            {"name": "sessionId", "in": "path", "required": True, "schema": UUID},
            int_param("after", 0, INT64_MAX, "Replay the messages after this seq (default 0)."),
            query("token", {"type": "string"}, "The token, for browsers (instead of the header)."),
        ],
        tag="stream",
        security=[{"bearer": []}, {"queryToken": []}],
    )
    | {"x-websocket": True},
}
