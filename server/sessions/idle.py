"""The idle sweep: sessions without activity (a stored message or a client command) for
``AGENT_SESSION_IDLE_TIMEOUT`` minutes are completed with reason ``idle_timeout``."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from server.sessions.errors import ActiveRecently, SessionNotActive
from store import sessions as session_store
from store import utcnow

if TYPE_CHECKING:
    from server.sessions.hub import Hub

__all__ = ["sweep_idle"]


async def sweep_idle(hub: Hub) -> list[str]:
    """Complete every active session whose last activity (a stored message or a
    client command) is older than the idle timeout."""
    cutoff = utcnow() - timedelta(minutes=hub.settings.idle_timeout_minutes)
    async with hub.db.read() as db:
        rows, _ = await session_store.list_sessions(
            db, session_store.SessionFilter(statuses=("active",)), limit=10_000
        )
    ended: list[str] = []
    for record in rows:
        if record.last_activity_at >= cutoff:
            continue
        try:
            await hub.end_session(record.id, "completed", "idle_timeout", idle_before=cutoff)
        except (SessionNotActive, ActiveRecently):  # ended or used meanwhile: not idle now
            continue
        ended.append(record.id)
    return ended
