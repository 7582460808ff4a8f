"""Review (API.md): the workspace's tree and files (or a commit's), reverting a file or
some of its hunks, and line comments sent to the agent as one prompt."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agent_bridge.jsontypes import JsonObject, JsonValue
from server.sessions import LineComment
from server.web.bodies import decode
from server.web.errors import ApiError
from server.web.jsonresp import JSONResponse
from server.web.requests import query_bool, read_json, session_id_param
from server.web.review_bodies import RevertBody, ReviewBody
from server.web.state import app_state

__all__ = ["routes"]

_TEXT = "text/plain; charset=utf-8"


def _whole(value: JsonValue) -> JsonValue:
    """JSON Schema's integer includes 3.0; the decoder's int does not: whole floats become
    ints (anything else stays, for the decoder to refuse)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _integers(body: JsonObject) -> JsonObject:
    """``hunks`` items and each comment's ``line`` as ints where they are whole numbers."""
    hunks = body.get("hunks")
    if isinstance(hunks, list):
        body["hunks"] = [_whole(h) for h in hunks]
    comments = body.get("comments")
    if isinstance(comments, list):
        for comment in comments:
            if isinstance(comment, dict) and "line" in comment:
                comment["line"] = _whole(comment["line"])
    return body


def _ref(request: Request) -> str | None:
    ref = request.query_params.get("ref")
    if ref is None or ref == "":
        return None
    if ref.startswith("-") or "\x00" in ref or len(ref) > 256:
        raise ApiError.validation("ref must name a commit.", field="ref")
    return ref


async def tree(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    path = request.query_params.get("path", "")
    entries = await state.sessions.workspaces.tree(session_id, path, _ref(request))
    return JSONResponse({"entries": entries})


async def file(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    path = request.query_params.get("path", "")
    raw = bool(query_bool(request, "raw"))
    found = await state.sessions.workspaces.read_file(session_id, path, _ref(request), raw)
    media = "application/octet-stream" if found.binary else _TEXT
    return Response(found.data, media_type=media, headers={"Cache-Control": "no-store"})


async def revert(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    await state.sessions.get(session_id)
    raw = await read_json(request, state.settings.max_body_bytes)
    body = decode(_integers(raw), RevertBody)
    found = await state.sessions.workspaces.revert(session_id, body.path, body.hunks)
    return JSONResponse(found)


async def send_review(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    await state.sessions.get(session_id)
    raw = await read_json(request, state.settings.max_body_bytes)
    body = decode(_integers(raw), ReviewBody)
    comments = [LineComment(c.path, c.line, c.side, c.body) for c in body.comments]
    run_id = await state.sessions.review(session_id, comments, body.text)
    return JSONResponse({"runId": run_id}, status_code=202)


routes = [
    Route("/api/sessions/{session_id}/tree", tree, methods=["GET"]),
    Route("/api/sessions/{session_id}/file", file, methods=["GET"]),
    Route("/api/sessions/{session_id}/changes/revert", revert, methods=["POST"]),
    Route("/api/sessions/{session_id}/review", send_review, methods=["POST"]),
]
