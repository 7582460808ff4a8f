"""Runs left ``running`` by a session that ended without its turn's end being stored.

A run's end is stored with the turn's last messages; when that write fails (the database
refused it), the session ends in ``error`` (``write_failed``) and its run would stay
``running`` for ever: counted as running by the statistics, never resumable. This ends
such runs ``failed`` with the reason, in a write of its own (which the database may take
where it refused the first: the agent's numbers are no longer part of it).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from server.contents import RunContent, as_json
from server.sessions.services import Services
from server.sessions.status import log_active_count, set_status
from server.stream.writer import Draft
from store import Run, utcnow
from store import runs as run_store
from store import sessions as session_store

if TYPE_CHECKING:
    from server.sessions.hub import Hub

__all__ = ["fail_open_runs", "failed_session"]

log = logging.getLogger("agent_sessions.sessions")


async def fail_open_runs(services: Services, session_id: str, why: str) -> int:
    """End the session's ``running`` runs ``failed`` with ``why``; returns how many."""
    async with services.db.read() as db:
        query = select(Run).where(Run.session_id == session_id, Run.status == "running")
        runs = list((await db.execute(query)).scalars())
    now = utcnow()
    for run in runs:
        ended: RunContent = {
            "type": "run",
            "runId": run.id,
            "status": "failed",
            "stopReason": None,
            "durationMs": None,
        }

        async def close(db: Any, run_id: str = run.id) -> None:
            await run_store.update_run(
                db, run_id, status="failed", completed_at=now, error_message=why
            )
            await session_store.update_session(db, session_id, active_run_id=None)

        draft = Draft("system", as_json(ended), run_id=run.id, step_number=run.step_count)
        await services.writer.submit(session_id, [draft], [close]).wait()
        log.warning("run ended failed: %s", why, extra={"session_id": session_id, "run_id": run.id})
    return len(runs)


async def failed_session(hub: Hub, session_id: str) -> None:
    """A live session failed on the server's side (not its agent's): it ends ``error``
    (``internal_error``) unless it already ended, and so do its running runs."""
    try:
        record = await hub.get_record(session_id)
        if record.status == "active":
            hub.writer.open_session(session_id, record.last_seq)
            await set_status(hub.writer, session_id, "error", "internal_error")
            await log_active_count(hub.services, "session failed", session_id)
        await fail_open_runs(hub.services, session_id, "the server failed during this run")
    except Exception:  # noqa: BLE001 - the store is gone too: logged, nothing more to do
        log.exception("could not record a failed session", extra={"session_id": session_id})
