"""A session's status changes, as stored state and as a message, and the count of
active sessions (a gauge and a log line) that follows each."""

from __future__ import annotations

import logging

from agent_bridge import AgentStartError
from agent_bridge.jsontypes import JsonObject
from server import metrics
from server.contents import StatusContent, as_json
from server.sessions.errors import AgentStartFailed
from server.sessions.services import Services
from server.sessions.supervision.processes import start_failure_detail
from server.stream.writer import Draft, Writer
from store import sessions as session_store
from store import utcnow
from store.operations import SetStatus

__all__ = [
    "log_active_count",
    "record_crash",
    "record_start_failure",
    "set_status",
    "status_draft",
]

log = logging.getLogger("agent_sessions.hub")


def status_draft(status: str, reason: str, detail: JsonObject | None = None) -> Draft:
    """A session status change, as a message."""
    content: StatusContent = {
        "type": "status",
        "status": status,
        "reason": reason,
        "detail": detail or {},
    }
    return Draft("system", as_json(content))


async def set_status(
    writer: Writer,
    session_id: str,
    status: str,
    reason: str,
    detail: JsonObject | None = None,
) -> None:
    """Store the status (the session has no running run any more) and its message."""
    draft = status_draft(status, reason, detail)
    await writer.submit(session_id, [draft], [SetStatus(session_id, status, utcnow())]).wait()


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


async def record_crash(
    services: Services,
    session_id: str,
    exit_code: int | None,
    stderr_tail: str,
    failure: str | None,
) -> None:
    """The agent exited on its own: the session becomes ``error`` (``agent_exited``, or
    ``agent_protocol_error`` when it broke the protocol)."""
    reason = "agent_protocol_error" if failure else "agent_exited"
    detail: JsonObject = {"exitCode": exit_code, "stderrTail": stderr_tail}
    if failure:
        detail["message"] = failure
    log.warning(
        "agent exited unexpectedly", extra={"session_id": session_id, "exit_code": exit_code}
    )
    await set_status(services.writer, session_id, "error", reason, detail)
    await log_active_count(services, "agent exited", session_id)


async def record_start_failure(
    services: Services, session_id: str, exc: AgentStartError
) -> AgentStartFailed:
    """The agent did not start: the session becomes ``error``; the refusal to raise (502)."""
    detail = start_failure_detail(exc)
    await set_status(services.writer, session_id, "error", "agent_start_failed", detail)
    await log_active_count(services, "agent start failed", session_id)
    log.warning("agent start failed: %s", exc.reason, extra={"session_id": session_id})
    return AgentStartFailed("agent_start_failed", exc.describe(), detail)
