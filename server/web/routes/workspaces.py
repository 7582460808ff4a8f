"""Worktrees and changes (API.md): create-time options, changes, commit, merge, and
deleting a session's worktree."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server.sessions.workspaces import operations
from server.web.errors import ApiError
from server.web.jsonresp import JSONResponse
from server.web.requests import (
    check_uuid,
    query_bool,
    query_choice,
    read_json,
    require_str,
    session_id_param,
)
from server.web.state import app_state

__all__ = ["create_options", "routes"]

ISOLATIONS = ("none", "worktree")
STRATEGIES = ("merge", "squash")


def create_options(body: dict[str, Any]) -> tuple[str | None, str | None]:
    """``isolation`` and ``baseRef`` of a create request."""
    isolation = require_str(body, "isolation", optional=True)
    if isolation is not None and isolation not in ISOLATIONS:
        raise ApiError.validation("isolation must be none or worktree.", field="isolation")
    base_ref = require_str(body, "baseRef", optional=True)
    return isolation, base_ref


async def changes(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    run_id = request.query_params.get("run") or None
    if run_id is not None:
        run_id = check_uuid(run_id, "run")
    fmt = query_choice(request, "format", ("json", "patch")) or "json"
    found = await operations.changes(state.hub, session_id, run_id)
    if fmt == "patch":
        return Response(found["patch"], media_type="text/x-diff")
    return JSONResponse(found)


async def commit(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    await state.hub.get_record(session_id)
    body = await read_json(request, state.settings.max_body_bytes)
    message = require_str(body, "message")
    assert message is not None
    return JSONResponse(await operations.commit(state.hub, session_id, message), status_code=201)


async def merge(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    await state.hub.get_record(session_id)
    body = await read_json(request, state.settings.max_body_bytes, allow_empty=True)
    into = require_str(body, "into", optional=True)
    strategy = require_str(body, "strategy", optional=True) or "merge"
    if strategy not in STRATEGIES:
        raise ApiError.validation("strategy must be merge or squash.", field="strategy")
    message = require_str(body, "message", optional=True)
    found = await operations.merge_session(state.hub, session_id, into, strategy, message)
    return JSONResponse(found)


async def delete_worktree(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    delete_branch = bool(query_bool(request, "deleteBranch"))
    await operations.delete_worktree(state.hub, session_id, delete_branch)
    return Response(status_code=204)


routes = [
    Route("/api/sessions/{session_id}/changes", changes, methods=["GET"]),
    Route("/api/sessions/{session_id}/commit", commit, methods=["POST"]),
    Route("/api/sessions/{session_id}/merge", merge, methods=["POST"]),
    Route("/api/sessions/{session_id}/worktree", delete_worktree, methods=["DELETE"]),
]
