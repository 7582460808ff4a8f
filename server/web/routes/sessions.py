"""Sessions: create, list, show, prompt, cancel, complete, delete, messages, permissions."""

from __future__ import annotations

from datetime import datetime, timedelta

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server import shapes
from server.sessions import MessageFilter, NewSession, SessionRecord
from server.stream.frames import row_view
from server.web.bodies import read_struct
from server.web.jsonresp import JSONResponse
from server.web.requests import (
    query_bool,
    query_choice,
    query_int,
    query_time,
    read_json,
    resource,
    session_id_param,
    uuid_param,
)
from server.web.routes import glance
from server.web.routes.controls import check_config
from server.web.routes.prompts import submit_prompt
from server.web.state import AppState, app_state
from server.web.views import session_view

STATUSES = shapes.SESSION_STATUSES
ROLES = shapes.ROLES
TYPES = shapes.MESSAGE_TYPES


async def session_json(state: AppState, record: SessionRecord) -> dict[str, object]:
    """A session the domain returned, with its repository."""
    return session_view(
        record, await state.sessions.listing.repo_of(record), state.sessions.sandbox_view()
    )


async def create_session(request: Request) -> Response:
    state = app_state(request)
    body = await read_struct(
        request,
        shapes.CreateSession,
        state.settings.max_body_bytes,
        checks={
            "config": check_config,
            "mcpServers": lambda value: list(state.sessions.mcp_names(value)),
            "clientTools": lambda value: (
                None if value is None else state.sessions.client_tools.check(value)
            ),
        },
    )
    new = NewSession(
        repo_id=body.repo_id,
        agent_id=body.agent_id,
        title=body.title,
        parent_run_id=body.parent_run_id,
        isolation=body.isolation,
        base_ref=body.base_ref,
        mcp_servers=tuple(body.mcp_servers or ()),
        mode_id=body.mode_id,
        config=dict(body.config) if body.config else None,
        visibility=body.visibility or "team",
        client_tools=tuple(body.client_tools or ()),
    )
    record = await state.sessions.create(new)
    return JSONResponse(await session_json(state, record), status_code=201)


async def get_session(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    page = await state.sessions.listing.session(session_id)
    view = session_view(page.record, page.repo, state.sessions.sandbox_view())
    view["messages"] = [row_view(row) for row in page.rows]
    return JSONResponse(view)


async def prompt(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    await state.sessions.get(session_id)
    body = await read_json(request, state.settings.max_prompt_body_bytes)
    return JSONResponse(await submit_prompt(state, session_id, body), status_code=202)


async def cancel(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    await state.sessions.cancel(session_id)
    return JSONResponse({"sessionId": session_id}, status_code=202)


async def complete(request: Request) -> Response:
    state = app_state(request)
    record = await state.sessions.complete(session_id_param(request))
    return JSONResponse(await session_json(state, record))


async def delete_session(request: Request) -> Response:
    if query_bool(request, "purge"):  # API.md "Finding and keeping sessions"
        return await glance.purge_session(request)
    state = app_state(request)
    record = await state.sessions.delete(session_id_param(request))
    return JSONResponse(await session_json(state, record))


def shown_after(since: datetime | None) -> datetime | None:
    """The stored-time bound for "timestamp strictly after ``since``". Timestamps are
    shown to the millisecond, so a message is after ``since`` when it was stored at or
    after the next whole millisecond: passing back a message's own timestamp never
    returns that message (or its batch) again."""
    if since is None:
        return None
    floor = since.replace(microsecond=since.microsecond // 1000 * 1000)
    return floor + timedelta(microseconds=999)


async def list_messages(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    after = query_int(request, "after", 0, minimum=0)
    limit = query_int(request, "limit", 500, minimum=1, maximum=5000)
    assert after is not None and limit is not None
    partial = query_bool(request, "partial")
    raw = bool(query_bool(request, "raw"))
    where = MessageFilter(
        after=after,
        since=shown_after(query_time(request, "since")),
        role=query_choice(request, "role", ROLES),
        type=query_choice(request, "type", TYPES),
        partial=False if partial is False else None,
    )
    rows = await state.sessions.listing.messages(session_id, where, limit=limit + 1, raw=raw)
    more = len(rows) > limit
    rows = rows[:limit]
    return JSONResponse(
        {
            "messages": [row_view(row, raw=raw) for row in rows],
            "nextAfter": rows[-1].seq if more and rows else None,
        }
    )


async def answer_permission(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    request_id = uuid_param(request, "request_id")
    body = await read_struct(request, shapes.PermissionAnswer, state.settings.max_body_bytes)
    option_id = body.option_id
    await state.sessions.answer_permission(session_id, request_id, option_id)
    return JSONResponse(
        {"requestId": request_id, "outcome": {"outcome": "selected", "optionId": option_id}}
    )


routes = [
    resource("/api/sessions", GET=glance.list_sessions, POST=create_session),
    resource(
        "/api/sessions/{session_id}",
        GET=get_session,
        DELETE=delete_session,
        PATCH=glance.patch_session,
    ),
    Route("/api/sessions/{session_id}/prompt", prompt, methods=["POST"]),
    Route("/api/sessions/{session_id}/cancel", cancel, methods=["POST"]),
    Route("/api/sessions/{session_id}/complete", complete, methods=["POST"]),
    Route("/api/sessions/{session_id}/messages", list_messages, methods=["GET"]),
    Route(
        "/api/sessions/{session_id}/permissions/{request_id}", answer_permission, methods=["POST"]
    ),
]

__all__ = ["routes"]
