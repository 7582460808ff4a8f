"""Prompts with content blocks (API.md, Prompt content) for the REST and WebSocket
prompt commands, and the attachments they stored."""

from __future__ import annotations

import re
from functools import partial

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agent_bridge.jsontypes import JsonObject, JsonValue
from server import shapes
from server.web.bodies import Check, decode
from server.web.errors import ApiError
from server.web.jsonresp import JSONResponse
from server.web.requests import query_int, session_id_param
from server.web.state import AppState, app_state

__all__ = ["routes", "submit_prompt"]

_SHA256 = re.compile(r"[0-9a-f]{64}")


def _content(value: JsonValue) -> list[JsonValue] | None:
    """The blocks, checked one by one later (``build_prompt``)."""
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise ApiError.validation("content must be a non-empty list of blocks.", field="content")
    return value


def _text(value: JsonValue, limit: int, *, alone: bool) -> str | None:
    """The text (required, and not blank, when there is no ``content``); 413 past the
    prompt limit."""
    if value is None and not alone:
        return None
    if not isinstance(value, str):
        raise ApiError.validation("text must be a string.", field="text")
    if len(value.encode()) > limit:
        raise ApiError.too_large("prompt", limit)
    if alone and not value.strip():
        raise ApiError.validation("text must not be empty.", field="text")
    return value


def read_prompt(body: JsonObject, limit: int) -> shapes.PromptBody:
    """A prompt body (REST) or command (WebSocket): content first, then text."""
    alone = body.get("content") is None
    checks: dict[str, Check] = {
        "content": _content,
        "text": partial(_text, limit=limit, alone=alone),
    }
    return decode(body, shapes.PromptBody, checks)


async def submit_prompt(state: AppState, session_id: str, body: JsonObject) -> JsonObject:
    """Check the prompt (``text`` and/or ``content``), start the turn, or with ``queue``
    queue it behind the running one (sessions/live/queue.py); the 202 body."""
    settings = state.settings
    prompt = read_prompt(body, settings.max_prompt_bytes)
    text, content = prompt.text, prompt.content
    blocks: list[JsonValue] | None = None
    if content is not None:
        blocks = [{"type": "text", "text": text}, *content] if text else [*content]
        texts = sum(len(str(b.get("text", "")).encode()) for b in blocks if isinstance(b, dict))
        if texts > settings.max_prompt_bytes:
            raise ApiError.too_large("prompt", settings.max_prompt_bytes)
    if prompt.queue:
        run_id, position = await state.sessions.queue_prompt(session_id, text, blocks)
        if position is not None:
            return {"runId": run_id, "sessionId": session_id, "queued": True, "position": position}
        return {"runId": run_id, "sessionId": session_id, "queued": False}
    if blocks is not None:
        run_id = await state.sessions.prompt_blocks(session_id, blocks)
    else:
        assert text is not None
        run_id = await state.sessions.prompt(session_id, text)
    return {"runId": run_id, "sessionId": session_id}


async def attachment(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    await state.sessions.get(session_id)
    sha256 = request.path_params["sha256"]
    if not _SHA256.fullmatch(sha256):
        raise ApiError.validation("sha256 must be 64 lowercase hex digits.", field="sha256")
    found = await state.sessions.attachment(session_id, sha256)
    if found is None:
        raise ApiError(404, "not_found", "No attachment with this sha256 in the session.")
    return Response(
        found.data,
        media_type=found.mime_type,
        headers={"Cache-Control": "private, max-age=31536000, immutable"},
    )


async def files(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    query = request.query_params.get("query", "")
    limit = query_int(request, "limit", 50, minimum=1, maximum=1000)
    assert limit is not None
    found = await state.sessions.workspaces.find_files(session_id, query, limit)
    if found is None:
        record = await state.sessions.get(session_id)
        raise ApiError.not_found("repo", record.repo_id)
    return JSONResponse({"files": found})


routes = [
    Route("/api/sessions/{session_id}/attachments/{sha256}", attachment, methods=["GET"]),
    Route("/api/sessions/{session_id}/files", files, methods=["GET"]),
]
