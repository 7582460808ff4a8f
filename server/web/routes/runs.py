"""Runs and tool calls: history with cursor pagination, and resume."""

from __future__ import annotations

from msgspec import UNSET
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server import shapes
from server.sessions import MessageFilter, Run, RunFilter
from server.stream.frames import row_view
from server.web.bodies import read_struct
from server.web.errors import ApiError
from server.web.jsonresp import JSONResponse
from server.web.requests import (
    check_uuid,
    decode_cursor,
    encode_cursor,
    query_bool,
    query_int,
    query_list,
    time_id_cursor,
    uuid_param,
)
from server.web.state import app_state
from server.web.views import message_view, run_view, tool_call_view

RUN_STATUSES = shapes.RUN_STATUSES
TOOL_STATUSES = shapes.TOOL_STATUSES


# Cursors carry SQL integers; anything outside this range was not made by us.
_MAX_INT = 2**31 - 1


def _bad_cursor() -> ApiError:
    return ApiError.validation("cursor is not valid.", field="cursor")


def _step_cursor(request: Request) -> tuple[int, str] | None:
    """(step_number, id) of the last tool call already seen: step order."""
    cursor = decode_cursor(request.query_params.get("cursor"), (int, str))
    if cursor is None:
        return None
    if not 0 <= cursor[0] <= _MAX_INT:
        raise _bad_cursor()
    return int(cursor[0]), check_uuid(cursor[1], "cursor")


def _seq_cursor(request: Request) -> int:
    """The seq of the last message already seen (0: from the start)."""
    cursor = decode_cursor(request.query_params.get("cursor"), (int,))
    if cursor is None:
        return 0
    if not 0 <= cursor[0] <= _MAX_INT:
        raise _bad_cursor()
    return int(cursor[0])


def _opt_uuid(request: Request, name: str) -> str | None:
    raw = request.query_params.get(name)
    return check_uuid(raw, name) if raw else None


async def _run(request: Request) -> Run:
    return await app_state(request).sessions.runs.get(uuid_param(request, "run_id"))


async def list_runs(request: Request) -> Response:
    limit = query_int(request, "limit", 20, minimum=1, maximum=200)
    assert limit is not None
    where = RunFilter(
        session_id=_opt_uuid(request, "sessionId"),
        repo_id=_opt_uuid(request, "repoId"),
        agent_id=request.query_params.get("agentId") or None,
        parent_run_id=_opt_uuid(request, "parentRunId"),
        statuses=query_list(request, "status", RUN_STATUSES),
    )
    before = time_id_cursor(request)
    rows = await app_state(request).sessions.runs.list(where, limit=limit + 1, before=before)
    more = len(rows) > limit
    rows = rows[:limit]
    last = rows[-1] if more and rows else None
    next_cursor = encode_cursor(last.created_at.isoformat(), last.id) if last else None
    return JSONResponse({"data": [run_view(r) for r in rows], "nextCursor": next_cursor})


async def get_run(request: Request) -> Response:
    return JSONResponse(run_view(await _run(request)))


async def run_messages(request: Request) -> Response:
    run = await _run(request)
    limit = query_int(request, "limit", 100, minimum=1, maximum=1000)
    assert limit is not None
    after = _seq_cursor(request)
    partial = bool(query_bool(request, "partial"))
    where = MessageFilter(after=after, run_id=run.id, partial=None if partial else False)
    rows = await app_state(request).sessions.runs.messages(run, where, limit=limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    return JSONResponse(
        {
            "data": [row_view(row) for row in rows],
            "nextCursor": encode_cursor(rows[-1].seq) if more and rows else None,
        }
    )


async def run_message(request: Request) -> Response:
    run = await _run(request)
    message = await app_state(request).sessions.runs.message(run, uuid_param(request, "message_id"))
    return JSONResponse(message_view(message, raw=True))


async def tool_calls(request: Request) -> Response:
    run = await _run(request)
    limit = query_int(request, "limit", 50, minimum=1, maximum=500)
    assert limit is not None
    after = _step_cursor(request)
    tool_name = request.query_params.get("toolName") or None
    statuses = query_list(request, "status", TOOL_STATUSES)
    rows = await app_state(request).sessions.runs.tool_calls(
        run, tool_name=tool_name, statuses=statuses, limit=limit + 1, after=after
    )
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = encode_cursor(rows[-1].step_number, rows[-1].id) if more and rows else None
    return JSONResponse({"data": [tool_call_view(c) for c in rows], "nextCursor": next_cursor})


async def tool_call(request: Request) -> Response:
    run = await _run(request)
    call = await app_state(request).sessions.runs.tool_call(run, uuid_param(request, "call_id"))
    return JSONResponse(tool_call_view(call))


async def resume(request: Request) -> Response:
    state = app_state(request)
    run = await _run(request)
    body = await read_struct(
        request, shapes.ResumeBody, state.settings.max_body_bytes, allow_empty=True
    )
    max_steps = state.settings.agent_max_steps if body.max_steps is UNSET else body.max_steps
    text = body.text or "Continue where you left off."
    new_run = await state.sessions.resume(run, text, max_steps)
    return JSONResponse(run_view(new_run), status_code=202)


routes = [
    Route("/api/agent-runs", list_runs, methods=["GET"]),
    Route("/api/agent-runs/{run_id}", get_run, methods=["GET"]),
    Route("/api/agent-runs/{run_id}/messages", run_messages, methods=["GET"]),
    Route("/api/agent-runs/{run_id}/messages/{message_id}", run_message, methods=["GET"]),
    Route("/api/agent-runs/{run_id}/tool-calls", tool_calls, methods=["GET"]),
    Route("/api/agent-runs/{run_id}/tool-calls/{call_id}", tool_call, methods=["GET"]),
    Route("/api/agent-runs/{run_id}/resume", resume, methods=["POST"]),
]
