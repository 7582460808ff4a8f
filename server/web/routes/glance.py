"""Finding and keeping sessions (API.md): the session list with search, activity order,
archived sessions and each session's runs and usage; renaming and archiving (PATCH);
purging (DELETE ?purge=true); dropping a queued prompt; the agents' last known
controls for the new-session form."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agent_bridge.jsontypes import JsonObject, JsonValue
from server import shapes
from server.sessions import keeping
from server.sessions.errors import NotFound
from server.web.bodies import read_struct
from server.web.errors import ApiError
from server.web.jsonresp import JSONResponse
from server.web.requests import (
    check_uuid,
    encode_cursor,
    query_bool,
    query_choice,
    query_int,
    query_list,
    session_id_param,
    time_id_cursor,
    uuid_param,
)
from server.web.state import AppState, app_state
from server.web.views import session_view
from store import Repo, SessionRecord
from store import glance as glance_store
from store import repos as repo_store
from store import search as search_store

__all__ = ["agent_controls", "list_sessions", "patch_session", "purge_session", "routes"]

SORTS = ("created", "activity")
ARCHIVED = ("false", "true", "all")


def _archived(request: Request) -> bool | None:
    """``archived=false`` (default) leaves archived sessions out, ``true`` lists only
    them, ``all`` both."""
    value = query_choice(request, "archived", ARCHIVED) or "false"
    return None if value == "all" else value == "true"


def _query(request: Request) -> list[str] | None:
    """The words of ``q`` (None: no search); 422 over ``MAX_QUERY_CHARS``."""
    raw = request.query_params.get("q")
    if raw is None or not raw.strip():
        return None
    if len(raw) > search_store.MAX_QUERY_CHARS:
        raise ApiError.validation(
            f"q must be at most {search_store.MAX_QUERY_CHARS} characters.", field="q"
        )
    return search_store.terms(raw)


def glance_view(record: SessionRecord, repo: Repo, usage: glance_store.Usage) -> JsonObject:
    view = session_view(record, repo)
    view["runCount"] = usage.run_count
    view["usage"] = {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "costUsd": round(usage.cost_usd, 6),
    }
    return view


async def list_sessions(request: Request) -> Response:
    state = app_state(request)
    limit = query_int(request, "limit", 20, minimum=1, maximum=200)
    offset = query_int(request, "offset", 0, minimum=0)
    assert limit is not None and offset is not None
    repo_id = request.query_params.get("repoId") or None
    if repo_id:
        repo_id = check_uuid(repo_id, "repoId")
    agent_id = request.query_params.get("agentId") or None
    statuses = query_list(request, "status", shapes.SESSION_STATUSES)
    archived = _archived(request)
    activity = (query_choice(request, "sort", SORTS) or "created") == "activity"
    words = _query(request)
    before = time_id_cursor(request)
    matches: dict[str, search_store.Hit] = {}
    async with state.db.read() as db:
        if words is not None:
            if before is not None:
                raise ApiError.validation("q pages with offset, not cursor.", field="cursor")
            where = search_store.SearchFilter(repo_id, agent_id, statuses, archived)
            hits = (
                await search_store.search_sessions(db, words, where, limit=limit, offset=offset)
                if words
                else []
            )
            # the page's rows carry the count; a page past the end needs it asked
            total = hits[0].total if hits else 0
            if words and not hits and offset:
                total = await search_store.count_matches(db, words, where)
            matches = {hit.session_id: hit for hit in hits}
            found = {r.id: r for r in await glance_store.sessions_by_ids(db, list(matches))}
            rows = [found[sid] for sid in matches if sid in found]
            more = False
        else:
            filters = glance_store.ListFilter(repo_id, agent_id, statuses, archived)
            listed, total = await glance_store.list_sessions(
                db, filters, activity=activity, limit=limit + 1, offset=offset, before=before
            )
            more = len(listed) > limit
            rows = list(listed[:limit])
        usage = await glance_store.usage_of(db, [r.id for r in rows])
        repos = {r.id: r for r in await repo_store.list_repos(db)}
    next_cursor = None
    if more and rows:
        last = rows[-1]
        moment = last.last_activity_at if activity else last.created_at
        next_cursor = encode_cursor(moment.isoformat(), last.id)
    sessions = []
    for record in rows:
        view = glance_view(record, repos[record.repo_id], usage.get(record.id, _NO_USAGE))
        hit = matches.get(record.id)
        if hit is not None:
            view["match"] = {"seq": hit.seq, "snippet": hit.snippet}
        sessions.append(view)
    return JSONResponse(
        {
            "sessions": sessions,
            "total": total,
            "limit": limit,
            "offset": offset,
            "nextCursor": next_cursor,
        }
    )


_NO_USAGE = glance_store.Usage()


async def session_glance(state: AppState, record: SessionRecord) -> JsonObject:
    """One session as listed (runs and usage included)."""
    async with state.db.read() as db:
        repo = await repo_store.get_repo(db, record.repo_id)
        usage = await glance_store.usage_of(db, [record.id])
    assert repo is not None
    return glance_view(record, repo, usage.get(record.id, _NO_USAGE))


MAX_TITLE = 500


def _title(value: JsonValue) -> str | None:
    """A new title: a non-blank string of at most ``MAX_TITLE`` characters."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ApiError.validation("title must be a non-blank string.", field="title")
    if len(value) > MAX_TITLE:
        raise ApiError.validation(f"title must be at most {MAX_TITLE} characters.", field="title")
    return value


async def patch_session(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    body = await read_struct(
        request, shapes.PatchSession, state.settings.max_body_bytes, checks={"title": _title}
    )
    record = await keeping.patch_session(
        state.hub,
        session_id,
        title=body.title,
        visibility=body.visibility,
        archived=body.archived,
    )
    return JSONResponse(await session_glance(state, record))


async def purge_session(request: Request) -> Response:
    """``DELETE /api/sessions/{id}?purge=true[&keepBranch=true]``."""
    state = app_state(request)
    keep_branch = bool(query_bool(request, "keepBranch"))
    await keeping.purge_session(state.hub, session_id_param(request), keep_branch=keep_branch)
    return Response(status_code=204)


async def drop_queued(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    run_id = uuid_param(request, "run_id")
    await state.hub.get_record(session_id)  # 404 for an unknown session
    live = state.hub.live.get(session_id)
    if live is None:
        raise NotFound("run", run_id, f"No queued run {run_id} in this session.")
    await live.queue.drop(run_id)
    return Response(status_code=204)


async def agent_controls(state: AppState) -> dict[str, JsonObject]:
    """Each agent's last known controls, for ``GET /api/agents``."""
    async with state.db.read() as db:
        return await glance_store.last_controls(db, list(state.agents))


routes = [
    Route("/api/sessions/{session_id}/queue/{run_id}", drop_queued, methods=["DELETE"]),
]
