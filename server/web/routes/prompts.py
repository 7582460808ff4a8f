"""Prompts with content blocks (API.md, Prompt content) for the REST and WebSocket
prompt commands, and the attachments they stored."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agent_bridge.jsontypes import JsonObject, JsonValue
from server import shapes
from server.sessions.file_index import INDEX
from server.sessions.prompt_content import build_prompt, get_attachment
from server.sessions.workspaces.service import session_root
from server.web.bodies import Check, decode
from server.web.errors import ApiError
from server.web.jsonresp import JSONResponse
from server.web.requests import query_int, session_id_param
from server.web.state import AppState, app_state
from store import repos as repo_store

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
    queue it behind the running one (server.sessions.queue); the 202 body."""
    settings = state.settings
    prompt = read_prompt(body, settings.max_prompt_bytes)
    text, content = prompt.text, prompt.content
    built = None
    if content is not None:
        blocks: list[JsonValue] = [{"type": "text", "text": text}, *content] if text else [*content]
        texts = sum(len(str(b.get("text", "")).encode()) for b in blocks if isinstance(b, dict))
        if texts > settings.max_prompt_bytes:
            raise ApiError.too_large("prompt", settings.max_prompt_bytes)
        live = await state.hub.active_live(session_id)
        built = await anyio.to_thread.run_sync(
            partial(
                build_prompt,
                blocks,
                session_id=session_id,
                root=live.repo_path,
                capabilities=live.translator.controls.prompt_capabilities,
                max_image_bytes=settings.max_image_bytes,
                max_embed_bytes=settings.max_embed_bytes,
            )
        )
        text = built.text
    assert text is not None
    if prompt.queue:
        live = await state.hub.active_live(session_id)
        run_id, position = await live.queue.submit(text, built, limit=settings.max_queued_prompts)
        if position is not None:
            return {"runId": run_id, "sessionId": session_id, "queued": True, "position": position}
        return {"runId": run_id, "sessionId": session_id, "queued": False}
    run_id = await state.hub.prompt(session_id, text, content=built)
    return {"runId": run_id, "sessionId": session_id}


async def attachment(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    await state.hub.get_record(session_id)
    sha256 = request.path_params["sha256"]
    if not _SHA256.fullmatch(sha256):
        raise ApiError.validation("sha256 must be 64 lowercase hex digits.", field="sha256")
    async with state.db.read() as db:
        found = await get_attachment(db, session_id, sha256)
    if found is None:
        raise ApiError(404, "not_found", "No attachment with this sha256 in the session.")
    return Response(
        found.data,
        media_type=found.mime_type,
        headers={"Cache-Control": "private, max-age=31536000, immutable"},
    )


async def files(request: Request) -> Response:
    state = app_state(request)
    record = await state.hub.get_record(session_id_param(request))
    query = request.query_params.get("query", "")
    limit = query_int(request, "limit", 50, minimum=1, maximum=1000)
    assert limit is not None
    async with state.db.read() as db:
        repo = await repo_store.get_repo(db, record.repo_id)
    if repo is None:
        raise ApiError.not_found("repo", record.repo_id)
    root = session_root(state.settings, record, Path(repo.path))
    found = await anyio.to_thread.run_sync(INDEX.search, root, query, limit)
    return JSONResponse({"files": found})


routes = [
    Route("/api/sessions/{session_id}/attachments/{sha256}", attachment, methods=["GET"]),
    Route("/api/sessions/{session_id}/files", files, methods=["GET"]),
]
