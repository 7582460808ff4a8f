"""The session hub: the registry and supervisor of live sessions. It admits sessions
(``admission``), starts each live session in its task group and cleans up when it ends
(``_supervise``: a crash becomes status ``error``, the lease is released), restarts agents
on demand, ends sessions, and runs startup recovery, the idle sweep and shutdown."""

from __future__ import annotations

import logging
import os
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from pathlib import Path
from types import EllipsisType
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from sqlalchemy.ext.asyncio import AsyncSession

from agent_bridge import AgentCgroups, AgentStartError, agent_environment, kill_orphans
from agent_bridge.jsontypes import JsonObject
from server import metrics
from server.cluster import Cluster
from server.sessions import answers
from server.sessions import status as state
from server.sessions.admission import admit, checked_repo_path
from server.sessions.agents import AgentConfig
from server.sessions.errors import (
    ActiveRecently,
    AgentStartFailed,
    NotFound,
    SessionNotActive,
    TurnInProgress,
    Unavailable,
)
from server.sessions.handshake import Restore
from server.sessions.idle import sweep_idle
from server.sessions.live_session import LiveSession
from server.sessions.recovery import recover_sessions
from server.sessions.services import CLEANUP_SECONDS, Services
from server.sessions.supervision import KeyedLocks, process_owner, start_error
from server.sessions.transcript import stored_preamble
from server.sessions.write_failure import WriteFailures
from server.settings import Settings
from server.stream.broker import Broker
from server.stream.writer import Writer
from store import Database, SessionRecord, utcnow
from store import repos as repo_store
from store import sessions as session_store

__all__ = ["Hub"]

log = logging.getLogger("agent_sessions.hub")


class Hub:
    def __init__(
        self,
        settings: Settings,
        database: Database,
        writer: Writer,
        broker: Broker,
        agents: dict[str, AgentConfig],
        cluster: Cluster,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.cluster = cluster
        self.owner, self.orphans = process_owner(database.url, cluster.node_id)
        self.cgroups = AgentCgroups(self.owner, settings.agent_cgroups)
        self.services = Services(settings, database, writer, cluster, clock, self.cgroups)
        self.db = database
        self.writer = writer
        writer.on_failure = self.write_failures = WriteFailures(self)
        self.broker = broker
        self.agents = agents
        self.live: dict[str, LiveSession] = {}
        self._locks: defaultdict[str, anyio.Lock] = defaultdict(anyio.Lock)
        self._resuming = KeyedLocks()
        self._tg: TaskGroup | None = None
        self.shutting_down = False

    # -- lifetime ----------------------------------------------------------------------

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            tg.start_soon(self._sweep_loop)
            tg.start_soon(self.orphans.run, lambda: set(self.live))
            tg.start_soon(self.write_failures.run)
            task_status.started()
            await anyio.sleep_forever()

    async def shutdown(self) -> None:
        """Cancel turns (runs ``interrupted``), stop every agent, close viewers (1001)."""
        self.shutting_down = True
        self.broker.close_all()
        lives = list(self.live.values())
        deadline = max((live.stop_deadline for live in lives), default=0.0)
        with anyio.move_on_after(deadline, shield=True):  # the stops run side by side
            async with anyio.create_task_group() as tg:
                for live in lives:
                    tg.start_soon(live.stop, "interrupted")
        await anyio.to_thread.run_sync(self.cgroups.release)
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    def forget(self, live: LiveSession) -> None:
        if self.live.get(live.id) is live:
            del self.live[live.id]

    def agent_env(self, agent: AgentConfig) -> dict[str, str]:
        return agent_environment(os.environ, agent.env, self.owner)

    async def log_active_count(self, change: str, session_id: str) -> None:
        await state.log_active_count(self.services, change, session_id)

    # -- starting agents ---------------------------------------------------------------

    async def _start_live(
        self, record: SessionRecord, repo_path: Path, restore: Restore
    ) -> LiveSession:
        if self._tg is None or self.shutting_down:
            raise Unavailable("shutting_down", "The server is shutting down.")
        owner = await self.cluster.claim(record.id)
        if owner is not None:
            raise Unavailable(
                "session_owned_elsewhere",
                "Another node runs this session's agent; send the command to it (retry).",
                {"owner": owner},
            )
        agent = self.agents[record.agent_id]
        live = LiveSession(self.services, record, repo_path, agent, self.agent_env(agent))
        self.live[record.id] = live
        try:
            await self._tg.start(self._supervise, live, restore)
        except BaseException as exc:
            self.forget(live)
            with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
                await self.cluster.release(record.id)
            cause = start_error(exc)
            if cause is not None:
                raise cause from None
            raise
        return live

    async def _supervise(
        self, live: LiveSession, restore: Restore, *, task_status: TaskStatus[None]
    ) -> None:
        """Run a live session in the hub's task group; whatever ends it, kill what it
        detached, record a crash, forget it and release its lease."""
        try:
            await live.run(restore, task_status=task_status)
        finally:
            with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
                await self.orphans.sweep(lambda: set(self.live) - {live.id})
                if live.crashed:
                    await self._record_crash(live)
            self.forget(live)
            with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
                await self.cluster.release(live.id)
            live.finished.set()

    async def _record_crash(self, live: LiveSession) -> None:
        """The agent exited on its own: the session becomes ``error``."""
        await state.record_crash(
            self.services, live.id, live.exit_code, live.stderr_tail, live.failure
        )

    async def _fail_start(self, record: SessionRecord, exc: AgentStartError) -> AgentStartFailed:
        return await state.record_start_failure(self.services, record.id, exc)

    async def _set_status(
        self, session_id: str, status: str, reason: str, detail: JsonObject | None = None
    ) -> None:
        await state.set_status(self.writer, session_id, status, reason, detail)

    # -- sessions ----------------------------------------------------------------------

    async def create_session(
        self,
        repo_id: str,
        agent_id: str | None,
        title: str | None,
        parent_run_id: str | None,
        *,
        forked_from: tuple[str, int] | None = None,
        visibility: str = "team",
    ) -> SessionRecord:
        """Admit a new session (``active``, counted against the limit); no agent yet."""
        record = await admit(
            self.services,
            self.agents,
            repo_id,
            agent_id,
            title,
            parent_run_id,
            forked_from,
            visibility,
        )
        await self.log_active_count("session created", record.id)
        self.writer.open_session(record.id, 0)
        return record

    async def start_new(
        self, record: SessionRecord, repo_path: Path | None = None, mcp: tuple[str, ...] = ()
    ) -> LiveSession:
        """Start the agent of a just-created session; a failure marks it ``error``."""
        async with self._locks[record.id]:
            try:
                if repo_path is None:
                    async with self.db.read() as db:
                        repo = await repo_store.get_repo(db, record.repo_id)
                    assert repo is not None
                    repo_path = checked_repo_path(self.settings, repo, record.id)
                restore = Restore(has_history=record.needs_context, mcp_servers=mcp)
                live = await self._start_live(record, repo_path, restore)
            except AgentStartError as exc:
                raise await self._fail_start(record, exc) from None
            except BaseException:
                with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
                    detail = {"message": "interrupted"}
                    await self._set_status(record.id, "error", "agent_start_failed", detail)
                raise
            await self.writer.submit(
                record.id, [state.status_draft("active", "created", {"agentId": record.agent_id})]
            ).wait()
            return live

    async def get_record(self, session_id: str, db: AsyncSession | None = None) -> SessionRecord:
        """The session (NotFound when there is none), read in ``db`` or a transaction of its own."""
        if db is None:
            async with self.db.read() as db:
                return await self.get_record(session_id, db)
        record = await session_store.get_session(db, session_id)
        if record is None:
            raise NotFound("session", session_id)
        return record

    async def ensure_live(self, record: SessionRecord) -> LiveSession:
        """The live session, restarting its agent (and restoring context) if it is gone
        or on its way out."""
        live = self.live.get(record.id)
        if live is not None and not live.stopping:
            return live
        async with self._locks[record.id]:
            live = self.live.get(record.id)
            if live is not None and live.stopping:
                await live.stop("cancelled")  # bounded; a no-op request if already stopping
                live = self.live.get(record.id)
            if live is not None:
                return live
            record = await self.get_record(record.id)
            if record.status != "active":
                raise SessionNotActive(f"The session is {record.status}.")
            async with self.db.read() as db:
                repo = await repo_store.get_repo(db, record.repo_id)
            assert repo is not None
            repo_path = checked_repo_path(self.settings, repo, record.id)
            self.writer.open_session(record.id, record.last_seq)
            restore = Restore(record.agent_session_id, has_history=record.last_seq > 0)
            try:
                live = await self._start_live(record, repo_path, restore)
            except AgentStartError as exc:
                raise await self._fail_start(record, exc) from None
            log.info("agent restarted for an existing session", extra={"session_id": record.id})
            return live

    async def active_live(self, session_id: str) -> LiveSession:
        record = await self.get_record(session_id)
        if record.status != "active":
            raise SessionNotActive(f"The session is {record.status}; it takes no prompts.")
        return await self.ensure_live(record)

    def resuming(self, run_id: str) -> AbstractAsyncContextManager[None]:
        """One resume of a run at a time: the check that it was not resumed yet and the
        commit of the run that resumes it happen under this lock, so of two racing resumes
        one is accepted and the other sees ``resumedBy``."""
        return self._resuming.hold(run_id)

    async def prompt(
        self,
        session_id: str,
        text: str,
        *,
        max_steps: int | None = None,
        step_base: int = 0,
        resumed_from: str | None = None,
        parent_run_id: str | None | EllipsisType = ...,  # ...: the session's own
        content: Any = None,  # a checked prompt_content.PromptContent (images, files)
    ) -> str:
        live = await self.active_live(session_id)
        return await live.start_turn(
            text,
            max_steps=self.settings.agent_max_steps if max_steps is None else max_steps,
            step_base=step_base,
            resumed_from=resumed_from,
            parent_run_id=live.parent_run_id if parent_run_id is ... else parent_run_id,
            content=content,
        )

    async def cancel(self, session_id: str) -> None:
        record = await self.get_record(session_id)
        live = self.live.get(session_id)
        if record.status != "active":
            raise SessionNotActive(f"The session is {record.status}.")
        if live is not None:
            await live.cancel_turn()
        await self.touch(session_id)

    async def touch(self, session_id: str) -> None:
        """Record client activity that stores no message (for the idle sweep)."""
        async with self.db.write() as db, db.begin():
            await session_store.update_session(db, session_id, last_activity_at=utcnow())

    async def answer_permission(self, session_id: str, request_id: str, option_id: str) -> None:
        await answers.answer_permission(self, session_id, request_id, option_id)

    async def answer_elicitation(
        self, session_id: str, request_id: str, action: str, content: Any
    ) -> JsonObject:
        """Returns the outcome given to the agent (see ``server.sessions.answers``)."""
        return await answers.answer_elicitation(self, session_id, request_id, action, content)

    async def end_session(
        self,
        session_id: str,
        status: str,
        reason: str,
        *,
        run_status: str = "cancelled",
        idle_before: datetime | None = None,
    ) -> SessionRecord:
        """complete / delete / idle: cancel the turn, stop the agent, store the status."""
        async with self._locks[session_id]:
            record = await self.get_record(session_id)
            if record.status != "active":
                raise SessionNotActive(f"The session is already {record.status}.")
            if idle_before is not None and record.last_activity_at >= idle_before:
                raise ActiveRecently()
            live = self.live.get(session_id)
            if live is not None:
                await live.stop(run_status)
                if live.crashed:
                    return await self.get_record(session_id)
            self.writer.open_session(session_id, record.last_seq)
            await self._set_status(session_id, status, reason)
        await self.log_active_count(f"session {status}: {reason}", session_id)
        return await self.get_record(session_id)

    async def reset_context(
        self, session_id: str, during: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        """Stop the live agent (if any) and mark the session so that its next prompt
        starts a fresh agent and hands it the stored transcript (rewind, import).
        ``during`` runs under the session lock, so no agent starts before it is done."""
        async with self._locks[session_id]:
            live = self.live.get(session_id)
            if live is not None:
                if live.turn is not None:
                    raise TurnInProgress()
                await live.stop("cancelled")
            async with self.db.write() as db, db.begin():
                await session_store.update_session(
                    db, session_id, needs_context=True, agent_session_id=None
                )
            if during is not None:
                await during()

    async def preamble(self, session_id: str) -> str:
        return await stored_preamble(self.db, session_id)

    # -- recovery and the idle sweep -----------------------------------------------------

    async def recover(self) -> None:
        """After a crash: kill what a dead process of this node left, interrupt its running
        runs and cancel its pending permissions (on several nodes: of sessions none owns)."""
        async with anyio.create_task_group() as tg:  # the processes and the rows at once
            tg.start_soon(anyio.to_thread.run_sync, self._kill_leftovers)
            await self.recover_sessions(None)
        async with self.db.read() as db:
            metrics.ACTIVE_SESSIONS.set(await session_store.count_active_sessions(db))

    def _kill_leftovers(self) -> None:
        self.cgroups.start()  # its stale cgroups first (20-45 ms: off the start-up's path)
        kill_orphans(self.owner)

    async def recover_sessions(self, only: set[str] | None) -> None:
        """Interrupt the running runs and cancel the pending permissions of sessions
        whose agent is gone (see ``server.sessions.recovery``)."""
        await recover_sessions(self, only)

    async def _sweep_loop(self) -> None:
        while True:
            await anyio.sleep(self.settings.idle_sweep_interval)
            try:
                await self.sweep_idle()
            except Exception:
                log.exception("idle sweep failed")

    async def sweep_idle(self) -> list[str]:
        """Complete the sessions idle past the timeout (see ``server.sessions.idle``)."""
        return await sweep_idle(self)
