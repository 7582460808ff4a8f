"""OpenAPI entries of API.md "Client tools": a session's set, the answer to a call, the
MCP endpoint the session's agent reaches them at, and ``Controls.mcpServers`` naming
``client-tools`` as not offered. ``client_tool_paths`` amends the shared shapes and
returns the new operations."""

from __future__ import annotations

from typing import Any

from server.web.openapi.parts import SESSION, json_response, op, path_param, request_body
from server.web.openapi.schemas import UUID, Schema, closed, obj, ref

__all__ = ["client_tool_paths"]

_EVENTS = "text/event-stream"
_MCP_HEADERS = [
    {
        "name": "Mcp-Session-Id",
        "in": "header",
        "required": False,
        "description": "The MCP session initialize made (every request but initialize).",
        "schema": {"type": "string"},
    },
    {
        "name": "MCP-Protocol-Version",
        "in": "header",
        "required": False,
        "description": "The version initialize agreed (2025-06-18, 2025-03-26, 2024-11-05).",
        "schema": {"type": "string"},
    },
]
_MCP_NOTE = (
    " The bearer here is the secret made for the session's agent process (passed to it "
    "in session/new), never the API token; anything else is 401."
)


def client_tool_paths(
    catalogue: dict[tuple[str, str], Any], schemas: dict[str, Schema]
) -> dict[tuple[str, str], Any]:
    schemas["ClientTool"] = closed(
        ["name", "description", "inputSchema"],
        name={"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
        description={"type": "string"},
        inputSchema={"type": "object", "description": 'A JSON Schema with "type": "object".'},
    )
    tool_set = closed(
        ["tools"], tools={"type": "array", "items": ref("ClientTool"), "maxItems": 32}
    )
    controls = schemas["Controls"]["properties"]
    controls["mcpServers"] = {
        "type": "array",
        "items": {
            "anyOf": [
                {"type": "string"},
                closed(
                    ["name", "transport", "offered"],
                    name={"const": "client-tools"},
                    transport={"const": "http"},
                    offered={"const": False},
                ),
            ]
        },
    }
    the_set = json_response("The session's client tools.", tool_set)
    call_id = path_param("callId", "The callId of a client_tool message.")
    mcp_path = "/mcp/sessions/{sessionId}"
    message = {"type": ["object", "array"], "description": "A JSON-RPC message or a batch."}
    return {
        ("GET", "/api/sessions/{sessionId}/client-tools"): op(
            "The session's client tools", {200: the_set}, params=[SESSION], errors=[503]
        ),
        ("PUT", "/api/sessions/{sessionId}/client-tools"): op(
            "Replace the session's client tools (announced to its agent)",
            {200: the_set},
            params=[SESSION],
            body=request_body(tool_set),
            errors=[503],
        ),
        ("POST", "/api/sessions/{sessionId}/client-tools/{callId}"): op(
            "Answer a client tool call; the first answer wins",
            {
                200: json_response(
                    "Answered; returned to the agent as the tools/call result.",
                    closed(["callId", "outcome"], callId=UUID, outcome={"const": "answered"}),
                )
            },
            params=[SESSION, call_id],
            body=request_body(
                closed(
                    [],
                    result={"description": "Any JSON."},
                    content={
                        "type": "array",
                        "items": obj(["type"], type={"type": "string"}),
                        "description": "MCP content blocks.",
                    },
                    isError={"type": "boolean"},
                ),
                required=False,
            ),
            errors=[409, 503],
        ),
        ("POST", mcp_path): op(
            "MCP streamable HTTP: the agent's JSON-RPC messages (initialize, tools/list, "
            "tools/call, ping, notifications)." + _MCP_NOTE,
            {
                200: {
                    "description": "The answer: JSON, or an event stream (a tools/call "
                    "that waits on a client).",
                    "content": {
                        "application/json": {"schema": message},
                        _EVENTS: {"schema": {"type": "string"}},
                    },
                },
                202: {"description": "Notifications only: accepted."},
            },
            params=[SESSION, *_MCP_HEADERS],
            body=request_body(message),
            errors=[404],
            tag="mcp",
        ),
        ("GET", mcp_path): op(
            "MCP streamable HTTP: the MCP session's event stream "
            "(notifications/tools/list_changed)." + _MCP_NOTE,
            {
                200: {
                    "description": "Server-sent events.",
                    "content": {_EVENTS: {"schema": {"type": "string"}}},
                },
                405: {
                    "description": "Without Accept: text/event-stream: method_not_allowed.",
                    "content": {"application/json": {"schema": ref("Error")}},
                },
            },
            params=[SESSION, *_MCP_HEADERS],
            errors=[400],
            tag="mcp",
        ),
        ("DELETE", mcp_path): op(
            "MCP streamable HTTP: end the MCP session." + _MCP_NOTE,
            {204: {"description": "Ended."}},
            params=[SESSION, *_MCP_HEADERS],
            errors=[400],
            tag="mcp",
        ),
    }
