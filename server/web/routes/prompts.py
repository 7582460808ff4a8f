"""Prompts with content blocks (API.md, Prompt content) for the REST and WebSocket
prompt commands, and the attachments they stored."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server.sessions.file_index import INDEX
from server.sessions.prompt_content import build_prompt, get_attachment
from server.sessions.workspaces.service import session_root
from server.web.errors import ApiError
from server.web.jsonresp import JSONResponse
from server.web.requests import query_int, session_id_param
from server.web.state import AppState, app_state
from store import repos as repo_store

__all__ = ["routes", "submit_prompt"]

_SHA256 = re.compile(r"[0-9a-f]{64}")


def _text(body: dict[str, Any], limit: int, *, required: bool) -> str | None:
    text = body.get("text")
    if text is None and not required:
        return None
    if not isinstance(text, str):
        raise ApiError.validation("text must be a string.", field="text")
    if len(text.encode()) > limit:
        raise ApiError.too_large("prompt", limit)
    return text


async def submit_prompt(state: AppState, session_id: str, body: dict[str, Any]) -> str:
    """Check the prompt (``text`` and/or ``content``), start the turn; the run id."""
    settings = state.settings
    content = body.get("content")
    if content is None:
        text = _text(body, settings.max_prompt_bytes, required=True)
        if text is None or not text.strip():
            raise ApiError.validation("text must not be empty.", field="text")
        return await state.hub.prompt(session_id, text)
    if not isinstance(content, list) or not content:
        raise ApiError.validation("content must be a non-empty list of blocks.", field="content")
    text = _text(body, settings.max_prompt_bytes, required=False)
    blocks = [{"type": "text", "text": text}, *content] if text else content
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
    return await state.hub.prompt(session_id, built.text, content=built)


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
