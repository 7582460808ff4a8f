"""Worktrees and changes (API.md): create-time options, changes, commit, merge, and
deleting a session's worktree."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server import shapes
from server.sessions import actor_ref
from server.web.bodies import read_struct
from server.web.jsonresp import JSONResponse
from server.web.requests import (
    check_uuid,
    query_bool,
    query_choice,
    session_id_param,
)
from server.web.state import app_state

__all__ = ["routes"]


async def changes(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    run_id = request.query_params.get("run") or None
    if run_id is not None:
        run_id = check_uuid(run_id, "run")
    fmt = query_choice(request, "format", ("json", "patch")) or "json"
    found = await state.sessions.workspaces.changes(session_id, run_id)
    if fmt == "patch":
        return Response(found["patch"], media_type="text/x-diff")
    return JSONResponse(found)


async def commit(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    await state.sessions.get(session_id)
    body = await read_struct(request, shapes.CommitBody, state.settings.max_body_bytes)
    found = await state.sessions.workspaces.commit(session_id, body.message)
    return JSONResponse({**found, "by": actor_ref()}, status_code=201)


async def merge(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    await state.sessions.get(session_id)
    body = await read_struct(
        request, shapes.MergeBody, state.settings.max_body_bytes, allow_empty=True
    )
    strategy = body.strategy or "merge"
    found = await state.sessions.workspaces.merge(session_id, body.into, strategy, body.message)
    return JSONResponse({**found, "by": actor_ref()})


async def delete_worktree(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    delete_branch = bool(query_bool(request, "deleteBranch"))
    await state.sessions.workspaces.delete_worktree(session_id, delete_branch)
    return Response(status_code=204)


routes = [
    Route("/api/sessions/{session_id}/changes", changes, methods=["GET"]),
    Route("/api/sessions/{session_id}/commit", commit, methods=["POST"]),
    Route("/api/sessions/{session_id}/merge", merge, methods=["POST"]),
    Route("/api/sessions/{session_id}/worktree", delete_worktree, methods=["DELETE"]),
]
