"""Repository functions for sessions. They never commit: the caller owns the transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import msgspec
from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from store.models import SessionRecord

__all__ = [
    "SessionFilter",
    "count_active_sessions",
    "delete_session",
    "filtered",
    "get_session",
    "insert_session_within_limit",
    "list_sessions",
    "lock_admission",
    "note_activity",
    "update_session",
]


class SessionFilter(msgspec.Struct, frozen=True):
    repo_id: str | None = None
    agent_id: str | None = None
    statuses: tuple[str, ...] = ()
    owner_id: str | None = None
    # A reader who is no admin: team sessions and their own private ones only.
    visible_to: str | None = None


async def lock_admission(db: AsyncSession) -> None:
    """Serialize admission decisions across connections (and nodes, on PostgreSQL).

    SQLite needs nothing: the writer's ``BEGIN IMMEDIATE`` already holds the write lock.
    """
    if db.get_bind().dialect.name == "postgresql":
        await db.execute(select(func.pg_advisory_xact_lock(7_240_001)))


async def count_active_sessions(db: AsyncSession) -> int:
    table = SessionRecord.__table__  # the table's own columns: no ORM at start-up (recovery)
    query = select(func.count()).select_from(table).where(table.c.status == "active")
    return int((await db.execute(query)).scalar_one())


async def insert_session_within_limit(
    db: AsyncSession, record: SessionRecord, limit: int
) -> int | None:
    """Insert ``record`` (status active) unless ``limit`` active sessions exist.

    Returns the new active count, or None when the limit is reached. Must run in a
    write transaction: the count and the insert are one atomic decision.
    """
    await lock_admission(db)
    active = await count_active_sessions(db)
    if active >= limit:
        return None
    db.add(record)
    await db.flush()
    return active + 1


async def get_session(db: AsyncSession, session_id: str) -> SessionRecord | None:
    return await db.get(SessionRecord, session_id)


async def update_session(db: AsyncSession, session_id: str, **values: Any) -> None:
    await db.execute(update(SessionRecord).where(SessionRecord.id == session_id).values(**values))


def filtered(query: Any, where: SessionFilter) -> Any:
    if where.repo_id:
        query = query.where(SessionRecord.repo_id == where.repo_id)
    if where.agent_id:
        query = query.where(SessionRecord.agent_id == where.agent_id)
    if where.statuses:
        query = query.where(SessionRecord.status.in_(where.statuses))
    if where.owner_id:
        query = query.where(SessionRecord.owner_id == where.owner_id)
    if where.visible_to is not None:
        query = query.where(
            (SessionRecord.visibility != "private") | (SessionRecord.owner_id == where.visible_to)
        )
    return query


async def list_sessions(
    db: AsyncSession,
    where: SessionFilter,
    *,
    limit: int,
    offset: int = 0,
    before: tuple[datetime, str] | None = None,
) -> tuple[Sequence[SessionRecord], int]:
    """Newest first. ``before`` = (created_at, id) of the last row of the previous page."""
    count = select(func.count()).select_from(SessionRecord)
    total = int((await db.execute(filtered(count, where))).scalar_one())
    query = filtered(select(SessionRecord), where)
    if before is not None:
        created, ident = before
        query = query.where(  # the bound alone first: an index range (see runs.list_runs)
            SessionRecord.created_at <= created,
            (SessionRecord.created_at < created) | (SessionRecord.id < ident),
        )
    else:
        query = query.offset(offset)
    query = query.order_by(SessionRecord.created_at.desc(), SessionRecord.id.desc()).limit(limit)
    rows = (await db.execute(query)).scalars().all()
    return rows, total


async def note_activity(db: AsyncSession, session_id: str, last_seq: int, when: datetime) -> None:
    """The writer's stamp after a batch: the session's highest stored seq and its times."""
    await db.execute(
        update(SessionRecord)
        .where(SessionRecord.id == session_id)
        .values(last_seq=last_seq, updated_at=when, last_activity_at=when)
        .execution_options(synchronize_session=False)
    )


async def delete_session(db: AsyncSession, session_id: str) -> None:
    """The session's row; its messages, runs and the rest cascade."""
    await db.execute(delete(SessionRecord).where(SessionRecord.id == session_id))
