"""Client tools (API.md "Client tools"): the session's set, answers to calls (REST and
the WebSocket command), and the MCP endpoint its agent reaches them at."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agent_bridge.jsontypes import JsonObject
from server.mcp_host import ToolHost, mcp_route
from server.sessions import Sessions
from server.web.errors import ApiError
from server.web.jsonresp import JSONResponse
from server.web.requests import read_json, resource, session_id_param, uuid_param
from server.web.state import app_state

__all__ = ["client_tool_command", "routes"]


def _by(via: str) -> JsonObject:
    """Who answered: the way it came (users, once there are, add who)."""
    return {"via": via, "user": None}


async def get_tools(request: Request) -> Response:
    state = app_state(request)
    tools = await state.sessions.client_tools.of(session_id_param(request))
    return JSONResponse({"tools": tools})


async def put_tools(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    body = await read_json(request, state.settings.max_body_bytes)
    unknown = sorted(set(body) - {"tools"})
    if unknown:
        raise ApiError.validation(f"Unknown fields: {', '.join(unknown)}.")
    tools = await state.sessions.client_tools.replace(session_id, body.get("tools"))
    return JSONResponse({"tools": tools})


async def answer(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    call_id = uuid_param(request, "call_id")
    body = await read_json(request, state.settings.max_body_bytes, allow_empty=True)
    await _answer(state.sessions, session_id, call_id, body, "rest")
    return JSONResponse({"callId": call_id, "outcome": "answered"})


async def _answer(
    sessions: Sessions, session_id: str, call_id: str, body: JsonObject, via: str
) -> None:
    unknown = sorted(set(body) - {"result", "content", "isError", "callId", "type", "id"})
    if unknown:
        raise ApiError.validation(f"Unknown fields: {', '.join(unknown)}.")
    await sessions.client_tools.answer(session_id, call_id, body, _by(via))


async def client_tool_command(sessions: Sessions, session_id: str, command: JsonObject) -> None:
    """The WebSocket ``client_tool_result`` command."""
    call_id = command.get("callId")
    if not isinstance(call_id, str) or not call_id:
        raise ApiError.validation("callId is required (a string).", field="callId")
    await _answer(sessions, session_id, call_id, command, "websocket")


def _find_host(request: Request, session_id: str) -> ToolHost | None:
    return app_state(request).sessions.client_tools.host(session_id)


routes = [
    resource("/api/sessions/{session_id}/client-tools", GET=get_tools, PUT=put_tools),
    Route("/api/sessions/{session_id}/client-tools/{call_id}", answer, methods=["POST"]),
    mcp_route(_find_host),
]
