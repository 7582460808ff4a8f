"""The session list (API.md, Finding and keeping sessions): by creation or latest
activity, with archived ones or not, or the sessions whose title or final message texts
match words of a search; each listed session with its runs, usage and repository."""

from __future__ import annotations

from datetime import datetime

import msgspec

from server.sessions.records import get_record
from server.sessions.services import Services
from store import Repo, SessionRecord
from store import glance as glance_store
from store import repos as repo_store
from store import search as search_store

__all__ = ["Listed", "SessionPage", "SessionQuery", "list_sessions", "listed_session"]


class SessionQuery(msgspec.Struct, frozen=True):
    """What a client asked of the list, already checked. ``words``: a search (its page
    by ``offset`` only), None without one."""

    repo_id: str | None = None
    agent_id: str | None = None
    statuses: tuple[str, ...] = ()
    archived: bool | None = False
    activity: bool = False
    words: list[str] | None = None
    limit: int = 20
    offset: int = 0
    before: tuple[datetime, str] | None = None
    # API.md "Users and access": one owner's sessions; the reader's (None: an admin's)
    owner_id: str | None = None
    visible_to: str | None = None


class Listed(msgspec.Struct, frozen=True):
    """One session as listed."""

    record: SessionRecord
    repo: Repo
    usage: glance_store.Usage
    match: search_store.Hit | None = None


class SessionPage(msgspec.Struct):
    sessions: list[Listed] = msgspec.field(default_factory=list)
    total: int = 0
    # (moment, id) of the page's last session when more follow: the next page's cursor
    next_after: tuple[datetime, str] | None = None


_NO_USAGE = glance_store.Usage()


async def list_sessions(services: Services, query: SessionQuery) -> SessionPage:
    """One page of the list, in one read."""
    matches: dict[str, search_store.Hit] = {}
    async with services.db.read() as db:
        if query.words is not None:
            where = search_store.SearchFilter(
                query.repo_id,
                query.agent_id,
                query.statuses,
                query.archived,
                query.owner_id,
                query.visible_to,
            )
            words = query.words
            hits = (
                await search_store.search_sessions(
                    db, words, where, limit=query.limit, offset=query.offset
                )
                if words
                else []
            )
            # the page's rows carry the count; a page past the end needs it asked
            total = hits[0].total if hits else 0
            if words and not hits and query.offset:
                total = await search_store.count_matches(db, words, where)
            matches = {hit.session_id: hit for hit in hits}
            found = {r.id: r for r in await glance_store.sessions_by_ids(db, list(matches))}
            rows = [found[sid] for sid in matches if sid in found]
            more = False
        else:
            filters = glance_store.ListFilter(
                query.repo_id,
                query.agent_id,
                query.statuses,
                query.archived,
                query.owner_id,
                query.visible_to,
            )
            listed, total = await glance_store.list_sessions(
                db,
                filters,
                activity=query.activity,
                limit=query.limit + 1,
                offset=query.offset,
                before=query.before,
            )
            more = len(listed) > query.limit
            rows = list(listed[: query.limit])
        usage = await glance_store.usage_of(db, [r.id for r in rows])
        repos = {r.id: r for r in await repo_store.list_repos(db)}
    page = SessionPage(total=total)
    if more and rows:
        last = rows[-1]
        page.next_after = (last.last_activity_at if query.activity else last.created_at, last.id)
    page.sessions = [
        Listed(r, repos[r.repo_id], usage.get(r.id, _NO_USAGE), matches.get(r.id)) for r in rows
    ]
    return page


async def listed_session(services: Services, session_id: str) -> Listed:
    """One session as listed (runs and usage included); NotFound."""
    record = await get_record(services.db, session_id)
    async with services.db.read() as db:
        repo = await repo_store.get_repo(db, record.repo_id)
        usage = await glance_store.usage_of(db, [record.id])
    assert repo is not None
    return Listed(record, repo, usage.get(record.id, _NO_USAGE))
