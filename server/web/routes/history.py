"""History routes: transcript, fork, rewind, export (NDJSON) and import (NDJSON)."""

from __future__ import annotations

from functools import partial

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from agent_bridge.jsontypes import JsonValue
from server import shapes
from server.web.bodies import Check, read_struct
from server.web.errors import ApiError
from server.web.jsonresp import JSONResponse
from server.web.requests import (
    check_uuid,
    query_int,
    read_body,
    uuid_param,
)
from server.web.routes.sessions import session_json
from server.web.state import app_state

__all__ = ["routes"]

NDJSON = "application/x-ndjson"
IMPORT_TYPES = (NDJSON, "application/ndjson", "application/jsonl", "application/json")


def _seq(name: str, *, required: bool) -> Check:
    """A seq field: its range is checked against the session (``history``), with the
    session's last seq in the refusal."""
    return partial(_seq_field, name=name, required=required)


def _seq_field(value: JsonValue, *, name: str, required: bool) -> int | None:
    if value is None:
        if required:
            raise ApiError.validation(f"{name} is required.", field=name)
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise ApiError.validation(f"{name} must be an integer.", field=name)
    return value


async def transcript(request: Request) -> Response:
    state = app_state(request)
    session_id = uuid_param(request, "session_id")
    upto = query_int(request, "uptoSeq", None, minimum=0)
    messages = await state.sessions.transcript(session_id, upto)
    return JSONResponse({"messages": messages})


async def fork(request: Request) -> Response:
    state = app_state(request)
    session_id = uuid_param(request, "session_id")
    await state.sessions.get(session_id)
    body = await read_struct(
        request,
        shapes.ForkBody,
        state.settings.max_body_bytes,
        allow_empty=True,
        checks={"uptoSeq": _seq("uptoSeq", required=False)},
    )
    record = await state.sessions.fork(session_id, body.upto_seq, body.title)
    return JSONResponse(await session_json(state, record), status_code=201)


async def rewind(request: Request) -> Response:
    state = app_state(request)
    session_id = uuid_param(request, "session_id")
    await state.sessions.get(session_id)
    body = await read_struct(
        request,
        shapes.RewindBody,
        state.settings.max_body_bytes,
        checks={"toSeq": _seq("toSeq", required=True)},
    )
    restore = body.restore_files is True
    record, _dropped = await state.sessions.rewind(session_id, body.to_seq, restore_files=restore)
    return JSONResponse(await session_json(state, record))


async def export(request: Request) -> Response:
    state = app_state(request)
    record = await state.sessions.get(uuid_param(request, "session_id"))
    headers = {"Content-Disposition": f'attachment; filename="session-{record.id}.ndjson"'}
    return StreamingResponse(state.sessions.export(record), media_type=NDJSON, headers=headers)


async def import_session(request: Request) -> Response:
    state = app_state(request)
    body = await read_body(request, state.settings.max_body_bytes)
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type not in IMPORT_TYPES:
        raise ApiError(
            400, "invalid_json", f"Send the archive as {NDJSON} (one JSON object per line)."
        )
    repo_id = request.query_params.get("repoId") or None
    if repo_id is not None:
        repo_id = check_uuid(repo_id, "repoId")
    agent_id = request.query_params.get("agentId") or None
    record = await state.sessions.import_archive(body, repo_id, agent_id)
    return JSONResponse(await session_json(state, record), status_code=201)


routes = [
    Route("/api/sessions/import", import_session, methods=["POST"]),
    Route("/api/sessions/{session_id}/transcript", transcript, methods=["GET"]),
    Route("/api/sessions/{session_id}/fork", fork, methods=["POST"]),
    Route("/api/sessions/{session_id}/rewind", rewind, methods=["POST"]),
    Route("/api/sessions/{session_id}/export", export, methods=["GET"]),
]
