"""Runs and tool calls: history with cursor pagination, and resume."""

from __future__ import annotations

from msgspec import UNSET
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server import shapes
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
from store import Run
from store import messages as message_store
from store import replay as replay_store
from store import runs as run_store

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
    run_id = uuid_param(request, "run_id")
    async with app_state(request).db.read() as db:
        run = await run_store.get_run(db, run_id)
    if run is None:
        raise ApiError.not_found("run", run_id)
    return run


async def list_runs(request: Request) -> Response:
    limit = query_int(request, "limit", 20, minimum=1, maximum=200)
    assert limit is not None
    where = run_store.RunFilter(
        session_id=_opt_uuid(request, "sessionId"),
        repo_id=_opt_uuid(request, "repoId"),
        agent_id=request.query_params.get("agentId") or None,
        parent_run_id=_opt_uuid(request, "parentRunId"),
        statuses=query_list(request, "status", RUN_STATUSES),
    )
    before = time_id_cursor(request)
    async with app_state(request).db.read() as db:
        rows = await run_store.list_runs(db, where, limit=limit + 1, before=before)
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
    where = message_store.MessageFilter(
        after=after, run_id=run.id, partial=None if partial else False
    )
    async with app_state(request).db.read() as db:
        rows = await replay_store.view_rows(db, run.session_id, where, limit=limit + 1)
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
    message_id = uuid_param(request, "message_id")
    async with app_state(request).db.read() as db:
        message = await message_store.get_message(db, message_id)
    if message is None or message.run_id != run.id:
        raise ApiError.not_found("message", message_id)
    return JSONResponse(message_view(message, raw=True))


async def tool_calls(request: Request) -> Response:
    run = await _run(request)
    limit = query_int(request, "limit", 50, minimum=1, maximum=500)
    assert limit is not None
    after = _step_cursor(request)
    tool_name = request.query_params.get("toolName") or None
    statuses = query_list(request, "status", TOOL_STATUSES)
    async with app_state(request).db.read() as db:
        rows = await run_store.list_tool_calls(
            db,
            run.id,
            tool_name=tool_name,
            statuses=statuses,
            limit=limit + 1,
            after=after,
        )
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = encode_cursor(rows[-1].step_number, rows[-1].id) if more and rows else None
    return JSONResponse({"data": [tool_call_view(c) for c in rows], "nextCursor": next_cursor})


async def tool_call(request: Request) -> Response:
    run = await _run(request)
    call_id = uuid_param(request, "call_id")
    async with app_state(request).db.read() as db:
        call = await run_store.get_tool_call(db, call_id)
    if call is None or call.run_id != run.id:
        raise ApiError.not_found("tool_call", call_id)
    return JSONResponse(tool_call_view(call))


async def resume(request: Request) -> Response:
    state = app_state(request)
    run = await _run(request)
    body = await read_struct(
        request, shapes.ResumeBody, state.settings.max_body_bytes, allow_empty=True
    )
    max_steps = state.settings.agent_max_steps if body.max_steps is UNSET else body.max_steps
    text = body.text or "Continue where you left off."
    if run.status not in ("paused", "interrupted"):
        raise ApiError(
            409,
            "run_not_paused",
            f"The run is {run.status}; only paused or interrupted runs resume.",
        )
    async with state.sessions.resuming(run.id):
        async with state.db.read() as db:
            later = await run_store.resumed_by(db, run.id)
            # The run's own count, or its last booked step if the server died before it
            # could close the run: the next step never reuses a number.
            steps = max(run.step_count, await run_store.last_step(db, run.id))
        if later is not None:
            raise ApiError(
                409,
                "run_not_paused",
                f"The run was already resumed by run {later.id}; resume that one.",
                {"resumedBy": later.id},
            )
        cap = state.settings.max_total_steps_per_run
        if steps >= cap:
            raise ApiError(
                409,
                "step_limit_reached",
                f"The run has used {steps} of its {cap} cumulative steps.",
                {"limit": cap, "stepCount": steps},
            )
        new_id = await state.sessions.prompt(
            run.session_id,
            text,
            max_steps=min(max_steps, cap - steps),
            step_base=steps,
            resumed_from=run.id,
            parent_run_id=run.parent_run_id,
        )
    async with state.db.read() as db:
        new_run = await run_store.get_run(db, new_id)
    assert new_run is not None
    # The run as accepted, at the step it starts from: its first tool calls may already
    # be stored (the writer commits within a millisecond or two of them).
    new_run.step_count = steps
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
