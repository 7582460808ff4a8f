"""A session's status changes, as stored state and as a message, and the count of
active sessions (a gauge and a log line) that follows each."""

from __future__ import annotations

import logging
from typing import Any

from server import metrics
from server.sessions.services import Services
from server.stream.writer import Draft, Writer
from store import sessions as session_store
from store import utcnow

__all__ = ["log_active_count", "set_status", "status_draft"]

log = logging.getLogger("agent_sessions.hub")


def status_draft(status: str, reason: str, detail: dict[str, Any] | None = None) -> Draft:
    """A session status change, as a message."""
    return Draft(
        "system", {"type": "status", "status": status, "reason": reason, "detail": detail or {}}
    )


async def set_status(
    writer: Writer,
    session_id: str,
    status: str,
    reason: str,
    detail: dict[str, Any] | None = None,
) -> None:
    """Store the status (the session has no running run any more) and its message."""

    async def write_status(db: Any) -> None:
        await session_store.update_session(
            db, session_id, status=status, updated_at=utcnow(), active_run_id=None
        )

    await writer.submit(session_id, [status_draft(status, reason, detail)], [write_status]).wait()


async def log_active_count(services: Services, change: str, session_id: str) -> None:
    async with services.db.read() as db:
        count = await session_store.count_active_sessions(db)
    metrics.ACTIVE_SESSIONS.set(count)
    log.info(
        "active sessions: %d of %d (%s)",
        count,
        services.settings.max_concurrent_sessions,
        change,
        extra={"event": "active_count", "session_id": session_id, "active": count},
    )
