"""Startup recovery and lease takeover: the runs of sessions whose agent is gone become
``interrupted`` and their pending permissions and elicitations ``cancelled``, each with the
messages that say so; the sessions stay active and restart their agent on the next prompt."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from agent_bridge.acp_types import PermissionOutcome
from server import metrics
from server.contents import PermissionContent, RunContent, as_json
from server.sessions.queue import cancel_left_over
from server.sessions.status import status_draft
from server.stream.writer import Draft
from store import messages as message_store
from store import permissions as permission_store
from store import runs as run_store
from store import sessions as session_store
from store import utcnow

if TYPE_CHECKING:
    from server.sessions.hub import Hub

__all__ = ["recover_sessions"]

log = logging.getLogger("agent_sessions.hub")


async def recover_sessions(hub: Hub, only: set[str] | None) -> None:
    """Interrupt the running runs and cancel the pending permissions of sessions
    whose agent is gone: all of them at start (``only`` None), or those ``only``."""
    now = utcnow()
    async with hub.db.read() as db:
        runs = list(await run_store.runs_with_status(db, "running"))
        pending = list(await permission_store.pending_permissions(db))
        elicitations = list(await message_store.pending_elicitations(db, None))
    if only is None and hub.cluster.enabled:
        everyone = (
            {r.session_id for r in runs}
            | {p.session_id for p in pending}
            | {m.session_id for m in elicitations}
        )
        only = {sid for sid in everyone if await hub.cluster.owner_url(sid) is None}
    if only is not None:
        runs = [r for r in runs if r.session_id in only]
        pending = [p for p in pending if p.session_id in only]
        elicitations = [m for m in elicitations if m.session_id in only]
    await cancel_left_over(hub.db, only)  # queued prompts were only in a dead process
    async with hub.db.read() as db:
        sessions = {
            sid: await session_store.get_session(db, sid)
            for sid in {r.session_id for r in runs}
            | {p.session_id for p in pending}
            | {m.session_id for m in elicitations}
        }
    for sid, record in sessions.items():
        if record is not None:
            hub.writer.open_session(sid, record.last_seq)
    for message in elicitations:  # the answer is only in their messages
        cancelled = {**message.content, "outcome": {"action": "cancel"}}
        cancelled["reason"] = "server_restarted"
        draft = Draft("system", cancelled, run_id=message.run_id)
        hub.writer.submit(message.session_id, [draft], [])
    for permission in pending:
        outcome: PermissionOutcome = {"outcome": "cancelled"}
        content: PermissionContent = {
            "type": "permission",
            "requestId": permission.id,
            "toolCallId": permission.tool_call_id,
            "tool": None,
            "options": permission.options,
            "outcome": outcome,
            "reason": "server_restarted",
        }

        async def decide(
            db: Any, request_id: str = permission.id, outcome: PermissionOutcome = outcome
        ) -> None:
            await permission_store.decide_permission(db, request_id, as_json(outcome), now)

        draft = Draft("system", as_json(content), run_id=permission.run_id)
        hub.writer.submit(permission.session_id, [draft], [decide])
    for run in runs:
        duration = int((now - run.created_at).total_seconds() * 1000)
        ended: RunContent = {
            "type": "run",
            "runId": run.id,
            "status": "interrupted",
            "stopReason": None,
            "durationMs": duration,
        }
        drafts = [
            Draft("system", as_json(ended), run_id=run.id, step_number=run.step_count),
            status_draft("active", "server_restarted", {"runId": run.id}),
        ]

        async def interrupt(
            db: Any, run_id: str = run.id, session_id: str = run.session_id, d: int = duration
        ) -> None:
            await run_store.update_run(
                db,
                run_id,
                status="interrupted",
                completed_at=now,
                duration_ms=d,
                error_message="the server stopped during this run",
            )
            await session_store.update_session(db, session_id, active_run_id=None)

        hub.writer.submit(run.session_id, drafts, [interrupt])
        metrics.observe_run(run.agent_id, "interrupted")
    await hub.writer.submit(None).wait()
    if runs or pending or elicitations:
        log.warning(
            "recovered after an unclean stop",
            extra={
                "event": "recovered",
                "runs": len(runs),
                "permissions": len(pending),
                "elicitations": len(elicitations),
            },
        )
