"""Agent controls (API.md, Agent controls): read them, set the mode, set a config value,
answer the agent's elicitations."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agent_bridge.jsontypes import JsonObject, JsonValue
from server import shapes
from server.sessions import Sessions
from server.web.bodies import Check, decode, read_struct
from server.web.errors import ApiError
from server.web.jsonresp import JSONResponse
from server.web.requests import check_uuid, session_id_param, uuid_param
from server.web.state import app_state

__all__ = [
    "check_config",
    "controls_command",
    "elicitation_command",
    "routes",
]


def check_value(value: JsonValue) -> str | bool:
    if not isinstance(value, str | bool):
        raise ApiError.validation("value must be a string (or true/false).", field="value")
    return value


async def controls_command(sessions: Sessions, session_id: str, command: JsonObject) -> None:
    """The WebSocket ``set_mode`` / ``set_config`` commands."""
    if command.get("type") == "set_mode":
        mode = decode(command, shapes.ModeBody)
        await sessions.set_mode(session_id, mode.mode_id)
        return
    config = decode(command, shapes.SetConfigCommand)
    await sessions.set_config(session_id, config.config_id, config.value)


def check_config(config: JsonValue) -> dict[str, str | bool] | None:
    """``config`` of a create request: configId → a string or true/false."""
    if config is None:
        return None
    if not isinstance(config, dict):
        raise ApiError.validation("config must be an object of configId → value.", field="config")
    return {str(k): check_value(v) for k, v in config.items()}


async def get_controls(request: Request) -> Response:
    state = app_state(request)
    return JSONResponse(await state.sessions.controls(session_id_param(request)))


async def put_mode(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    await state.sessions.get(session_id)
    body = await read_struct(request, shapes.ModeBody, state.settings.max_body_bytes)
    return JSONResponse(await state.sessions.set_mode(session_id, body.mode_id))


async def put_config(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    await state.sessions.get(session_id)
    body = await read_struct(request, shapes.ConfigBody, state.settings.max_body_bytes)
    config_id = request.path_params["config_id"]
    return JSONResponse(await state.sessions.set_config(session_id, config_id, body.value))


# The content is the session's to check (against the requested schema), as it came.
_CONTENT_AS_SENT: dict[str, Check] = {"content": lambda content: content}


async def elicitation_command(sessions: Sessions, session_id: str, command: JsonObject) -> None:
    """The WebSocket ``elicitation`` command."""
    answer = decode(command, shapes.ElicitationCommand, _CONTENT_AS_SENT)
    request_id = check_uuid(answer.request_id, "requestId")
    await sessions.answer_elicitation(session_id, request_id, answer.action, answer.content)


async def answer_elicitation(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    request_id = uuid_param(request, "request_id")
    body = await read_struct(
        request, shapes.ElicitationAnswer, state.settings.max_body_bytes, checks=_CONTENT_AS_SENT
    )
    outcome = await state.sessions.answer_elicitation(
        session_id, request_id, body.action, body.content
    )
    return JSONResponse({"requestId": request_id, "outcome": outcome})


routes = [
    Route("/api/sessions/{session_id}/controls", get_controls, methods=["GET"]),
    Route("/api/sessions/{session_id}/mode", put_mode, methods=["PUT"]),
    Route("/api/sessions/{session_id}/config/{config_id}", put_config, methods=["PUT"]),
    Route(
        "/api/sessions/{session_id}/elicitations/{request_id}",
        answer_elicitation,
        methods=["POST"],
    ),
]
