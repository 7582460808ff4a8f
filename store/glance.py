"""The session list at a glance (API.md, Finding and keeping sessions): the list in
creation or activity order with archived sessions left out, each page's run counts and
usage in one grouped query, titles and their source, and purging a session's rows.
Functions take an ``AsyncSession`` and never commit: the caller owns the transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import msgspec
from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from store.models import (
    Attachment,
    Message,
    Permission,
    Run,
    SessionOwner,
    SessionRecord,
    ToolCall,
)
from store.sessions import SessionFilter, filtered

__all__ = [
    "MAX_TITLE_CHARS",
    "ListFilter",
    "Usage",
    "cancel_queued",
    "queued_runs",
    "sessions_by_ids",
    "fork_title",
    "last_controls",
    "list_sessions",
    "prompt_title",
    "purge_rows",
    "set_agent_title",
    "set_prompt_title",
    "usage_of",
]

MAX_TITLE_CHARS = 80


class ListFilter(msgspec.Struct, frozen=True):
    repo_id: str | None = None
    agent_id: str | None = None
    statuses: tuple[str, ...] = ()
    archived: bool | None = False  # None: both
    owner_id: str | None = None
    visible_to: str | None = None  # a reader's id: team sessions and their own private ones


class Usage(msgspec.Struct, frozen=True):
    run_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


def _filtered(query: Any, where: ListFilter) -> Any:
    """The session list's filters (store.sessions'), and whether archived ones count."""
    query = filtered(
        query,
        SessionFilter(
            where.repo_id, where.agent_id, where.statuses, where.owner_id, where.visible_to
        ),
    )
    if where.archived is not None:
        query = query.where(SessionRecord.archived.is_(where.archived))
    return query


async def list_sessions(
    db: AsyncSession,
    where: ListFilter,
    *,
    activity: bool,
    limit: int,
    offset: int = 0,
    before: tuple[datetime, str] | None = None,
) -> tuple[Sequence[SessionRecord], int]:
    """Newest first by ``created_at``, or by ``last_activity_at`` with ``activity``;
    ``before`` = (that time, id) of the last row of the previous page."""
    count = select(func.count()).select_from(SessionRecord)
    total = int((await db.execute(_filtered(count, where))).scalar_one())
    column = SessionRecord.last_activity_at if activity else SessionRecord.created_at
    query = _filtered(select(SessionRecord), where)
    if before is not None:
        moment, ident = before
        query = query.where(column <= moment, (column < moment) | (SessionRecord.id < ident))
    else:
        query = query.offset(offset)
    query = query.order_by(column.desc(), SessionRecord.id.desc()).limit(limit)
    return (await db.execute(query)).scalars().all(), total


async def usage_of(db: AsyncSession, session_ids: Sequence[str]) -> dict[str, Usage]:
    """Run count, tokens and US dollar cost of each session, one grouped query for a
    whole page (through ``ix_runs_session_created``). Runs still queued are counted;
    their usage is none yet."""
    if not session_ids:
        return {}
    usd = func.sum(Run.cost_amount).filter(
        or_(Run.cost_currency.is_(None), func.upper(Run.cost_currency) == "USD")
    )
    query = (
        select(
            Run.session_id,
            func.count(),
            func.coalesce(func.sum(Run.input_tokens), 0),
            func.coalesce(func.sum(Run.output_tokens), 0),
            func.coalesce(usd, 0.0),
        )
        .where(Run.session_id.in_(list(session_ids)))
        .group_by(Run.session_id)
    )
    return {
        row[0]: Usage(int(row[1]), int(row[2] or 0), int(row[3] or 0), float(row[4] or 0))
        for row in (await db.execute(query)).all()
    }


def prompt_title(text: str) -> str | None:
    """The first non-blank line of a prompt, at most ``MAX_TITLE_CHARS`` characters."""
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= MAX_TITLE_CHARS else line[: MAX_TITLE_CHARS - 1] + "…"
    return None


def fork_title(parent: str | None) -> str | None:
    """A fork is titled "<parent title> (fork)" (untitled: it takes a prompt's later)."""
    return None if parent is None else f"{parent} (fork)"


async def set_prompt_title(db: AsyncSession, session_id: str, text: str) -> None:
    """A session still without a title takes its first prompt's."""
    title = prompt_title(text)
    if title is None:
        return
    await db.execute(
        update(SessionRecord)
        .where(SessionRecord.id == session_id, SessionRecord.title.is_(None))
        .values(title=title, title_source="prompt")
        .execution_options(synchronize_session=False)
    )


async def set_agent_title(db: AsyncSession, session_id: str, title: str) -> None:
    """The agent's title (``session_info_update``) replaces one taken from a prompt or
    an earlier one of its own, never one a person gave."""
    title = title.strip()[:500]
    if not title:
        return
    await db.execute(
        update(SessionRecord)
        .where(
            SessionRecord.id == session_id,
            or_(SessionRecord.title.is_(None), SessionRecord.title_source.in_(("prompt", "agent"))),
        )
        .values(title=title, title_source="agent")
        .execution_options(synchronize_session=False)
    )


async def purge_rows(db: AsyncSession, session_id: str) -> None:
    """Every row the session owns, children first (no reliance on cascades: PostgreSQL's
    and SQLite's would do, but the tool calls and owners carry no foreign key to the
    session). Attachments are stored per session, so its own are the ones no other
    session uses; the search index entries go with their rows (triggers, or the
    PostgreSQL indexes)."""
    runs = select(Run.id).where(Run.session_id == session_id).scalar_subquery()
    await db.execute(delete(ToolCall).where(ToolCall.run_id.in_(runs)))
    await db.execute(delete(ToolCall).where(ToolCall.session_id == session_id))
    await db.execute(delete(Message).where(Message.session_id == session_id))
    await db.execute(delete(Permission).where(Permission.session_id == session_id))
    await db.execute(delete(Attachment).where(Attachment.session_id == session_id))
    await db.execute(delete(Run).where(Run.session_id == session_id))
    await db.execute(delete(SessionOwner).where(SessionOwner.session_id == session_id))
    await db.execute(delete(SessionRecord).where(SessionRecord.id == session_id))


async def last_controls(db: AsyncSession, agent_ids: Sequence[str]) -> dict[str, Any]:
    """Each agent's controls as its latest session last knew them (none for an agent
    that never started): what a new-session form can offer before the agent runs."""
    found: dict[str, Any] = {}
    for agent_id in agent_ids:
        query = (
            select(SessionRecord.controls)
            .where(SessionRecord.agent_id == agent_id, SessionRecord.controls.is_not(None))
            .order_by(SessionRecord.created_at.desc())
            .limit(1)
        )
        controls = (await db.execute(query)).scalar_one_or_none()
        if controls is not None:
            found[agent_id] = controls
    return found


async def sessions_by_ids(db: AsyncSession, ids: Sequence[str]) -> list[SessionRecord]:
    if not ids:
        return []
    query = select(SessionRecord).where(SessionRecord.id.in_(list(ids)))
    return list((await db.execute(query)).scalars())


async def cancel_queued(db: AsyncSession, run_ids: Sequence[str], when: datetime) -> None:
    """Queued runs that will never start end ``cancelled`` (a started one is left)."""
    await db.execute(
        update(Run)
        .where(Run.id.in_(list(run_ids)), Run.status == "queued")
        .values(status="cancelled", stop_reason="cancelled", completed_at=when)
        .execution_options(synchronize_session=False)
    )


async def queued_runs(db: AsyncSession, session_ids: Sequence[str] | None) -> list[str]:
    """The ids of runs still ``queued`` (of these sessions, or of all)."""
    t = Run.__table__.c  # the table's own columns: no ORM at start-up (recovery)
    query = select(t.id).where(t.status == "queued")
    if session_ids is not None:
        query = query.where(t.session_id.in_(list(session_ids)))
    return list((await db.execute(query)).scalars())
