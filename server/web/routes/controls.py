"""Agent controls (API.md, Agent controls): read them, set the mode, set a config value,
answer the agent's elicitations."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server.sessions import agent_controls
from server.sessions.controls import ControlsState, empty_controls
from server.sessions.elicitation_gate import ACTIONS
from server.sessions.hub import Hub
from server.web.errors import ApiError
from server.web.jsonresp import JSONResponse
from server.web.requests import check_uuid, read_json, require_str, session_id_param, uuid_param
from server.web.state import app_state

__all__ = [
    "controls_command",
    "create_choices",
    "elicitation_command",
    "routes",
    "set_config",
    "set_mode",
]


async def controls_of(hub: Hub, session_id: str) -> dict[str, Any]:
    record = await hub.get_record(session_id)
    live = hub.live.get(session_id)
    if live is not None and not live.stopping:
        return live.translator.controls.view()
    return ControlsState(record.controls).view() if record.controls else empty_controls()


async def set_mode(hub: Hub, session_id: str, mode_id: str) -> dict[str, Any]:
    live = await hub.active_live(session_id)
    return await agent_controls.set_mode(live, mode_id)


async def set_config(hub: Hub, session_id: str, config_id: str, value: Any) -> dict[str, Any]:
    live = await hub.active_live(session_id)
    return await agent_controls.set_config(live, config_id, value)


def check_value(value: Any) -> Any:
    if not isinstance(value, str | bool):
        raise ApiError.validation("value must be a string (or true/false).", field="value")
    return value


async def controls_command(hub: Hub, session_id: str, command: dict[str, Any]) -> None:
    """The WebSocket ``set_mode`` / ``set_config`` commands."""
    if command.get("type") == "set_mode":
        mode_id = require_str(command, "modeId")
        assert mode_id is not None
        await set_mode(hub, session_id, mode_id)
        return
    config_id = require_str(command, "configId")
    assert config_id is not None
    if "value" not in command:
        raise ApiError.validation("value is required.", field="value")
    await set_config(hub, session_id, config_id, check_value(command["value"]))


def create_choices(body: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """``modeId`` and ``config`` of a create request, checked for shape."""
    mode_id = require_str(body, "modeId", optional=True)
    config = body.get("config")
    if config is None:
        return mode_id, {}
    if not isinstance(config, dict):
        raise ApiError.validation("config must be an object of configId → value.", field="config")
    return mode_id, {str(k): check_value(v) for k, v in config.items()}


async def get_controls(request: Request) -> Response:
    state = app_state(request)
    return JSONResponse(await controls_of(state.hub, session_id_param(request)))


async def put_mode(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    await state.hub.get_record(session_id)
    body = await read_json(request, state.settings.max_body_bytes)
    mode_id = require_str(body, "modeId")
    assert mode_id is not None
    return JSONResponse(await set_mode(state.hub, session_id, mode_id))


async def put_config(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    await state.hub.get_record(session_id)
    body = await read_json(request, state.settings.max_body_bytes)
    if "value" not in body:
        raise ApiError.validation("value is required.", field="value")
    config_id = request.path_params["config_id"]
    return JSONResponse(
        await set_config(state.hub, session_id, config_id, check_value(body["value"]))
    )


def elicitation_answer(body: dict[str, Any]) -> tuple[str, Any]:
    """``action`` and ``content`` of an answer, checked for shape (the content against
    the requested schema is the session's to check)."""
    action = require_str(body, "action")
    if action not in ACTIONS:
        raise ApiError.validation("action must be one of accept, decline, cancel.", field="action")
    return action, body.get("content")


async def elicitation_command(hub: Hub, session_id: str, command: dict[str, Any]) -> None:
    """The WebSocket ``elicitation`` command."""
    request_id = require_str(command, "requestId")
    assert request_id is not None
    action, content = elicitation_answer(command)
    await hub.answer_elicitation(session_id, check_uuid(request_id, "requestId"), action, content)


async def answer_elicitation(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    request_id = uuid_param(request, "request_id")
    body = await read_json(request, state.settings.max_body_bytes)
    action, content = elicitation_answer(body)
    outcome = await state.hub.answer_elicitation(session_id, request_id, action, content)
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
