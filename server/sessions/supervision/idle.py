"""The idle sweep: sessions without activity (a stored message or a client command) for
``AGENT_SESSION_IDLE_TIMEOUT`` minutes are completed with reason ``idle_timeout``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from server.sessions.errors import ActiveRecently, SessionNotActive
from store import Database, utcnow
from store import sessions as session_store

__all__ = ["EndIdle", "sweep_idle"]

EndIdle = Callable[[str, datetime], Awaitable[object]]
"""Ends one session as idle unless it was active since the cutoff (then ActiveRecently)."""


async def sweep_idle(database: Database, timeout_minutes: float, end: EndIdle) -> list[str]:
    """Complete every active session whose last activity (a stored message or a
    client command) is older than the idle timeout."""
    cutoff = utcnow() - timedelta(minutes=timeout_minutes)
    async with database.read() as db:
        rows, _ = await session_store.list_sessions(
            db, session_store.SessionFilter(statuses=("active",)), limit=10_000
        )
    ended: list[str] = []
    for record in rows:
        if record.last_activity_at >= cutoff:
            continue
        try:
            await end(record.id, cutoff)
        except (SessionNotActive, ActiveRecently):  # ended or used meanwhile: not idle now
            continue
        ended.append(record.id)
    return ended
