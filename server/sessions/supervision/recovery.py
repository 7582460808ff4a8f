"""Startup recovery and lease takeover: the runs of sessions whose agent is gone become
``interrupted``, their pending permissions and elicitations ``cancelled`` and their client
tool calls ended ``server_restarted``, each with the messages that say so; the sessions
stay active and restart their agent on the next prompt."""

from __future__ import annotations

import logging

from agent_bridge.acp_types import PermissionOutcome
from server import metrics
from server.cluster import Cluster
from server.contents import PermissionContent, RunContent, as_json
from server.sessions.supervision.status import status_draft
from server.stream.writer import Draft, Writer
from store import Database, utcnow
from store import client_tools as call_store
from store import glance as glance_store
from store import messages as message_store
from store import permissions as permission_store
from store import runs as run_store
from store import sessions as session_store
from store.operations import CancelQueued, DecidePermission, InterruptRun

__all__ = ["cancel_left_over", "recover_sessions"]

log = logging.getLogger("agent_sessions.hub")


async def recover_sessions(
    database: Database, writer: Writer, cluster: Cluster, only: set[str] | None
) -> None:
    """Interrupt the running runs and cancel the pending permissions of sessions
    whose agent is gone: all of them at start (``only`` None), or those ``only``."""
    now = utcnow()
    async with database.read() as db:
        runs = list(await run_store.runs_with_status(db, "running"))
        pending = list(await permission_store.pending_permissions(db))
        elicitations = list(await message_store.pending_elicitations(db, None))
        calls = await call_store.pending_calls(db, None)
    if only is None and cluster.enabled:
        everyone = (
            {r.session_id for r in runs}
            | {p.session_id for p in pending}
            | {m.session_id for m in elicitations}
            | {m.session_id for m in calls}
        )
        only = {sid for sid in everyone if await cluster.owner_url(sid) is None}
    if only is not None:
        runs = [r for r in runs if r.session_id in only]
        pending = [p for p in pending if p.session_id in only]
        elicitations = [m for m in elicitations if m.session_id in only]
        calls = [m for m in calls if m.session_id in only]
    await cancel_left_over(database, writer, only)  # queued prompts lived in a dead process
    async with database.read() as db:
        sessions = {
            sid: await session_store.get_session(db, sid)
            for sid in {r.session_id for r in runs}
            | {p.session_id for p in pending}
            | {m.session_id for m in elicitations}
            | {m.session_id for m in calls}
        }
    for sid, record in sessions.items():
        if record is not None:
            writer.open_session(sid, record.last_seq)
    for message in elicitations:  # the answer is only in their messages
        cancelled = {**message.content, "outcome": {"action": "cancel"}}
        cancelled["reason"] = "server_restarted"
        draft = Draft("system", cancelled, run_id=message.run_id)
        writer.submit(message.session_id, [draft], [])
    for message in calls:  # their agent is gone with the server that asked
        call = {**message.content, "outcome": "server_restarted", "isError": True, "by": None}
        writer.submit(message.session_id, [Draft("system", call, run_id=message.run_id)], [])
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

        draft = Draft("system", as_json(content), run_id=permission.run_id)
        writer.submit(
            permission.session_id, [draft], [DecidePermission(permission.id, as_json(outcome), now)]
        )
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

        writer.submit(run.session_id, drafts, [InterruptRun(run.session_id, run.id, now, duration)])
        metrics.observe_run(run.agent_id, "interrupted")
    if runs or pending or elicitations or calls:
        await writer.submit(None).wait()  # all of it stored (a start with nothing to
        # recover opens no write transaction: the writer's first connection waits for a write)
        log.warning(
            "recovered after an unclean stop",
            extra={
                "event": "recovered",
                "runs": len(runs),
                "permissions": len(pending),
                "elicitations": len(elicitations),
                "client_tool_calls": len(calls),
            },
        )


async def cancel_left_over(database: Database, writer: Writer, only: set[str] | None) -> int:
    """Runs left ``queued`` by a server that stopped (of the sessions ``only``, or all):
    their prompts were only in its memory (live/queue.py). How many were ended."""
    async with database.read() as db:
        run_ids = await glance_store.queued_runs(db, sorted(only) if only is not None else None)
    if run_ids:
        await writer.submit(None, (), [CancelQueued(run_ids, utcnow())]).wait()
    return len(run_ids)
