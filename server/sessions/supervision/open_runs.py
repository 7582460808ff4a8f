"""Runs left ``running`` by a session that ended without its turn's end being stored.

A run's end is stored with the turn's last messages; when that write fails (the database
refused it), the session ends in ``error`` (``write_failed``) and its run would stay
``running`` for ever: counted as running by the statistics, never resumable. This ends
such runs ``failed`` with the reason, in a write of its own (which the database may take
where it refused the first: the agent's numbers are no longer part of it).
"""

from __future__ import annotations

import logging

from server.contents import RunContent, as_json
from server.sessions.records import get_record
from server.sessions.services import Services
from server.sessions.supervision.status import log_active_count, set_status
from server.stream.writer import Draft
from store import runs as run_store
from store import utcnow
from store.operations import CloseRun

__all__ = ["fail_open_runs", "failed_session"]

log = logging.getLogger("agent_sessions.sessions")


async def fail_open_runs(services: Services, session_id: str, why: str) -> int:
    """End the session's ``running`` runs ``failed`` with ``why``; returns how many."""
    async with services.db.read() as db:
        runs = list(await run_store.running_runs(db, session_id))
    now = utcnow()
    for run in runs:
        ended: RunContent = {
            "type": "run",
            "runId": run.id,
            "status": "failed",
            "stopReason": None,
            "durationMs": None,
        }
        values = {"status": "failed", "completed_at": now, "error_message": why}
        draft = Draft("system", as_json(ended), run_id=run.id, step_number=run.step_count)
        close = CloseRun(session_id, run.id, values)
        await services.writer.submit(session_id, [draft], [close]).wait()
        log.warning("run ended failed: %s", why, extra={"session_id": session_id, "run_id": run.id})
    return len(runs)


async def failed_session(services: Services, session_id: str) -> None:
    """A live session failed on the server's side (not its agent's): it ends ``error``
    (``internal_error``) unless it already ended, and so do its running runs."""
    try:
        record = await get_record(services.db, session_id)
        if record.status == "active":
            services.writer.open_session(session_id, record.last_seq)
            await set_status(services.writer, session_id, "error", "internal_error")
            await log_active_count(services, "session failed", session_id)
        await fail_open_runs(services, session_id, "the server failed during this run")
    except Exception:  # noqa: BLE001 - the store is gone too: logged, nothing more to do
        log.exception("could not record a failed session", extra={"session_id": session_id})
