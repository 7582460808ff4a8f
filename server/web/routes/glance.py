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
from server.sessions import MAX_QUERY_CHARS, Listed, SessionQuery, search_terms
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
from server.web.state import app_state
from server.web.views import session_view
from server.web.visibility import owner_filter

__all__ = ["list_sessions", "patch_session", "purge_session", "routes"]

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
    if len(raw) > MAX_QUERY_CHARS:
        raise ApiError.validation(f"q must be at most {MAX_QUERY_CHARS} characters.", field="q")
    return search_terms(raw)


def glance_view(listed: Listed, sandbox: JsonObject) -> JsonObject:
    """A session as listed: its view, runs and usage, and a search's match."""
    view = session_view(listed.record, listed.repo, sandbox)
    usage = listed.usage
    view["runCount"] = usage.run_count
    view["usage"] = {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "costUsd": round(usage.cost_usd, 6),
    }
    if listed.match is not None:
        view["match"] = {"seq": listed.match.seq, "snippet": listed.match.snippet}
    return view


async def list_sessions(request: Request) -> Response:
    state = app_state(request)
    limit = query_int(request, "limit", 20, minimum=1, maximum=200)
    offset = query_int(request, "offset", 0, minimum=0)
    assert limit is not None and offset is not None
    repo_id = request.query_params.get("repoId") or None
    if repo_id:
        repo_id = check_uuid(repo_id, "repoId")
    words = _query(request)
    before = time_id_cursor(request)
    if words is not None and before is not None:
        raise ApiError.validation("q pages with offset, not cursor.", field="cursor")
    query = SessionQuery(
        repo_id=repo_id,
        agent_id=request.query_params.get("agentId") or None,
        statuses=query_list(request, "status", shapes.SESSION_STATUSES),
        archived=_archived(request),
        activity=(query_choice(request, "sort", SORTS) or "created") == "activity",
        words=words,
        limit=limit,
        offset=offset,
        before=before,
        **owner_filter(request.query_params.get("owner") or None),
    )
    page = await state.sessions.list_sessions(query)
    sandbox = state.sessions.sandbox_view()
    after = page.next_after
    return JSONResponse(
        {
            "sessions": [glance_view(listed, sandbox) for listed in page.sessions],
            "total": page.total,
            "limit": limit,
            "offset": offset,
            "nextCursor": encode_cursor(after[0].isoformat(), after[1]) if after else None,
        }
    )


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
    listed = await state.sessions.patch(
        session_id, title=body.title, visibility=body.visibility, archived=body.archived
    )
    return JSONResponse(glance_view(listed, state.sessions.sandbox_view()))


async def purge_session(request: Request) -> Response:
    """``DELETE /api/sessions/{id}?purge=true[&keepBranch=true]``."""
    state = app_state(request)
    keep_branch = bool(query_bool(request, "keepBranch"))
    await state.sessions.purge(session_id_param(request), keep_branch=keep_branch)
    return Response(status_code=204)


async def drop_queued(request: Request) -> Response:
    state = app_state(request)
    session_id = session_id_param(request)
    await state.sessions.drop_queued(session_id, uuid_param(request, "run_id"))
    return Response(status_code=204)


routes = [
    Route("/api/sessions/{session_id}/queue/{run_id}", drop_queued, methods=["DELETE"]),
]
