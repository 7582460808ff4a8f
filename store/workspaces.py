"""Queries for session workspaces: a session's runs in order (their checkpoints), the
first run after a point of the conversation, the sessions of a repository."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from store.models import Message, Run, SessionRecord

__all__ = ["first_run_after", "run_ids", "sessions_of_repo"]


async def run_ids(db: AsyncSession, session_id: str) -> list[str]:
    """The session's runs, oldest first."""
    query = select(Run.id).where(Run.session_id == session_id).order_by(Run.created_at, Run.id)
    return list((await db.execute(query)).scalars().all())


async def first_run_after(db: AsyncSession, session_id: str, seq: int) -> str | None:
    """The run of the first kept message after ``seq`` (None: no run after it)."""
    query = (
        select(Message.run_id)
        .where(
            Message.session_id == session_id,
            Message.seq > seq,
            Message.dropped.is_(False),
            Message.run_id.is_not(None),
        )
        .order_by(Message.seq)
        .limit(1)
    )
    return (await db.execute(query)).scalar_one_or_none()


async def sessions_of_repo(db: AsyncSession, repo_id: str) -> Sequence[SessionRecord]:
    query = select(SessionRecord).where(SessionRecord.repo_id == repo_id)
    return (await db.execute(query)).scalars().all()
