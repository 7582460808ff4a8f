"""The supervisor of live sessions: it owns their lives. It admits sessions
(``admission``), starts each live session in its task group and cleans up when it ends
(``_supervise``: a crash becomes status ``error``, what the agent detached is killed, the
lease is released), restarts agents on demand, ends sessions, and runs startup recovery,
the idle sweep, the handling of write failures, the orphan sweep and shutdown. It keeps
the live sessions in the ``Registry``, which never calls it back."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path

import anyio
from anyio.abc import TaskGroup, TaskStatus

from agent_bridge import AgentStartError, OrphanSweeper, agent_environment, kill_orphans
from agent_bridge.jsontypes import JsonObject
from server import metrics
from server.sessions.agents.config import AgentConfig
from server.sessions.errors import (
    ActiveRecently,
    AgentStartFailed,
    NotFound,
    SessionNotActive,
    TurnInProgress,
    Unavailable,
)
from server.sessions.live.handshake import Restore
from server.sessions.live.session import LiveSession
from server.sessions.records import get_record
from server.sessions.services import CLEANUP_SECONDS, Services
from server.sessions.supervision import status as state
from server.sessions.supervision.admission import admit, checked_repo_path
from server.sessions.supervision.idle import sweep_idle
from server.sessions.supervision.open_runs import fail_open_runs, failed_session
from server.sessions.supervision.processes import start_error
from server.sessions.supervision.recovery import recover_sessions
from server.sessions.supervision.registry import Registry
from server.sessions.supervision.write_failure import WHY, WriteFailures
from server.stream.broker import Broker
from store import SessionRecord, utcnow
from store import repos as repo_store
from store import sessions as session_store

__all__ = ["Supervisor"]

log = logging.getLogger("agent_sessions.hub")


class Supervisor:
    def __init__(
        self,
        services: Services,
        registry: Registry,
        broker: Broker,
        agents: dict[str, AgentConfig],
        owner: str,
        orphans: OrphanSweeper,
    ) -> None:
        self.services = services
        self.registry = registry
        self._broker = broker
        self._agents = agents
        self.owner = owner  # the marker of this server process on its agents
        self.orphans = orphans
        self.write_failures = WriteFailures(self._end_failed, lambda: self.shutting_down)
        services.writer.on_failure = self.write_failures
        self._tg: TaskGroup | None = None
        self.shutting_down = False

    # -- lifetime ----------------------------------------------------------------------

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            tg.start_soon(self._sweep_loop)
            tg.start_soon(self.orphans.run, lambda: set(self.registry))
            tg.start_soon(self.write_failures.run)
            task_status.started()
            await anyio.sleep_forever()

    async def shutdown(self) -> None:
        """Cancel turns (runs ``interrupted``), stop every agent, close viewers (1001)."""
        self.shutting_down = True
        self._broker.close_all()
        lives = list(self.registry.values())
        deadline = max((live.stop_deadline for live in lives), default=0.0)
        with anyio.move_on_after(deadline, shield=True):  # the stops run side by side
            async with anyio.create_task_group() as tg:
                for live in lives:
                    tg.start_soon(live.stop, "interrupted")
        cgroups = self.services.cgroups
        if cgroups is not None:
            await cgroups.ready()  # a start-up sweep still running ends first
            await anyio.to_thread.run_sync(cgroups.release)
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    @property
    def taking_sessions(self) -> bool:
        """Whether sessions can be started (what /readyz reports)."""
        tg = self._tg
        return tg is not None and not self.shutting_down and not tg.cancel_scope.cancel_called

    def _agent_env(self, agent: AgentConfig) -> dict[str, str]:
        env = agent_environment(os.environ, agent.env, self.owner)
        sandbox = self.services.sandbox  # inside its wall: a fixed list, its private home
        return env if sandbox is None else sandbox.environment(agent, env)

    async def _log_active_count(self, change: str, session_id: str) -> None:
        await state.log_active_count(self.services, change, session_id)

    # -- starting agents ---------------------------------------------------------------

    async def _start_live(
        self, record: SessionRecord, repo_path: Path, restore: Restore
    ) -> LiveSession:
        if self._tg is None or self.shutting_down:
            raise Unavailable("shutting_down", "The server is shutting down.")
        cluster = self.services.cluster
        owner = await cluster.claim(record.id)
        if owner is not None:
            raise Unavailable(
                "session_owned_elsewhere",
                "Another node runs this session's agent; send the command to it (retry).",
                {"owner": owner},
            )
        agent = self._agents[record.agent_id]
        live = LiveSession(self.services, record, repo_path, agent, self._agent_env(agent))
        self.registry.add(live)
        try:
            await self._tg.start(self._supervise, live, restore)
        except BaseException as exc:
            self.registry.forget(live)
            with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
                await cluster.release(record.id)
            cause = start_error(exc)
            if cause is not None:
                raise cause from None
            raise
        return live

    async def _supervise(
        self, live: LiveSession, restore: Restore, *, task_status: TaskStatus[None]
    ) -> None:
        """Run a live session in the supervisor's task group; whatever ends it, kill what
        it detached, record a crash, forget it and release its lease."""
        try:
            await live.run(restore, task_status=task_status)
        except Exception:
            if not live.started:
                raise  # to _start_live: the start failed
            # One session's failure must not end the supervisor's task group (every
            # session's).
            log.exception("a live session failed", extra={"session_id": live.id})
            with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
                await failed_session(self.services, live.id)
        finally:
            with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
                await self.orphans.sweep(lambda: set(self.registry) - {live.id})
                if live.crashed:
                    await state.record_crash(
                        self.services, live.id, live.exit_code, live.stderr_tail, live.failure
                    )
            self.registry.forget(live)
            with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
                await self.services.cluster.release(live.id)
            live.finished.set()

    async def _fail_start(self, record: SessionRecord, exc: AgentStartError) -> AgentStartFailed:
        return await state.record_start_failure(self.services, record.id, exc)

    async def _set_status(
        self, session_id: str, status: str, reason: str, detail: JsonObject | None = None
    ) -> None:
        await state.set_status(self.services.writer, session_id, status, reason, detail)

    async def _repo_path(self, record: SessionRecord) -> Path:
        async with self.services.db.read() as db:
            repo = await repo_store.get_repo(db, record.repo_id)
        assert repo is not None
        return checked_repo_path(self.services.settings, repo, record.id)

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
            self._agents,
            repo_id,
            agent_id,
            title,
            parent_run_id,
            forked_from,
            visibility,
        )
        await self._log_active_count("session created", record.id)
        self.services.writer.open_session(record.id, 0)
        return record

    async def start_new(self, record: SessionRecord, mcp: tuple[str, ...] = ()) -> LiveSession:
        """Start the agent of a just-created session; a failure marks it ``error``."""
        async with self.registry.lock(record.id):
            try:
                repo_path = await self._repo_path(record)
                restore = Restore(has_history=record.needs_context, mcp_servers=mcp)
                live = await self._start_live(record, repo_path, restore)
            except AgentStartError as exc:
                raise await self._fail_start(record, exc) from None
            except BaseException:
                with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
                    detail = {"message": "interrupted"}
                    await self._set_status(record.id, "error", "agent_start_failed", detail)
                raise
            await self.services.writer.submit(
                record.id, [state.status_draft("active", "created", {"agentId": record.agent_id})]
            ).wait()
            return live

    async def ensure_live(self, record: SessionRecord) -> LiveSession:
        """The live session, restarting its agent (and restoring context) if it is gone
        or on its way out."""
        live = self.registry.running(record.id)
        if live is not None:
            return live
        async with self.registry.lock(record.id):
            live = self.registry.get(record.id)
            if live is not None and live.stopping:
                await live.stop("cancelled")  # bounded; a no-op request if already stopping
                live = self.registry.get(record.id)
            if live is not None:
                return live
            record = await get_record(self.services.db, record.id)
            if record.status != "active":
                raise SessionNotActive(f"The session is {record.status}.")
            repo_path = await self._repo_path(record)
            self.services.writer.open_session(record.id, record.last_seq)
            restore = Restore(record.agent_session_id, has_history=record.last_seq > 0)
            try:
                live = await self._start_live(record, repo_path, restore)
            except AgentStartError as exc:
                raise await self._fail_start(record, exc) from None
            log.info("agent restarted for an existing session", extra={"session_id": record.id})
            return live

    async def active_live(self, session_id: str) -> LiveSession:
        """The live session of an active session (its agent started if need be)."""
        record = await get_record(self.services.db, session_id)
        if record.status != "active":
            raise SessionNotActive(f"The session is {record.status}; it takes no prompts.")
        return await self.ensure_live(record)

    async def end_session(
        self,
        session_id: str,
        status: str,
        reason: str,
        *,
        run_status: str = "cancelled",
        idle_before: datetime | None = None,
    ) -> SessionRecord:
        """complete / delete / idle / error: cancel the turn, stop the agent, store the
        status."""
        database, writer = self.services.db, self.services.writer
        async with self.registry.lock(session_id):
            record = await get_record(database, session_id)
            if record.status != "active":
                raise SessionNotActive(f"The session is already {record.status}.")
            if idle_before is not None and record.last_activity_at >= idle_before:
                raise ActiveRecently()
            live = self.registry.get(session_id)
            if live is not None:
                await live.stop(run_status)
                if live.crashed:
                    return await get_record(database, session_id)
            writer.open_session(session_id, record.last_seq)
            await self._set_status(session_id, status, reason)
        await self._log_active_count(f"session {status}: {reason}", session_id)
        return await get_record(database, session_id)

    async def _end_failed(self, session_id: str, status: str, reason: str, run: str) -> None:
        try:
            await self.end_session(session_id, status, reason, run_status=run)
        finally:  # a run whose end was the write that failed is still ``running``
            await fail_open_runs(self.services, session_id, WHY)

    async def reset_context(
        self, session_id: str, during: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        """Stop the live agent (if any) and mark the session so that its next prompt
        starts a fresh agent and hands it the stored transcript (rewind, import).
        ``during`` runs under the session lock, so no agent starts before it is done."""
        async with self.registry.lock(session_id):
            live = self.registry.get(session_id)
            if live is not None:
                if live.turn is not None:
                    raise TurnInProgress()
                await live.stop("cancelled")
            async with self.services.db.write() as db, db.begin():
                await session_store.update_session(
                    db, session_id, needs_context=True, agent_session_id=None
                )
            if during is not None:
                await during()

    async def touch(self, session_id: str) -> None:
        """Record client activity that stores no message (for the idle sweep)."""
        async with self.services.db.write() as db, db.begin():
            await session_store.update_session(db, session_id, last_activity_at=utcnow())

    # -- recovery and the idle sweep -----------------------------------------------------

    async def recover(self) -> None:
        """After a crash: interrupt the running runs a dead process of this node left and
        cancel its pending permissions (on several nodes: of sessions none owns)."""
        await self.recover_sessions(None)
        async with self.services.db.read() as db:
            metrics.ACTIVE_SESSIONS.set(await session_store.count_active_sessions(db))

    async def start_processes(self) -> None:
        """After ``recover``: make this process's agent cgroups and kill what a dead process
        of this node left."""
        # The processes on worker threads, once the rows are done, and past readiness: an
        # agent's start waits for its cgroups (``AgentCgroups.ready``); the orphans a dead
        # process left carry its marker, never this one's, so none is taken for a new agent.
        assert self._tg is not None, "start_processes() runs once run() started"
        if self.services.cgroups is not None:
            await self._tg.start(self.services.cgroups.run_start)
        self._tg.start_soon(anyio.to_thread.run_sync, kill_orphans, self.owner)

    async def recover_sessions(self, only: set[str] | None) -> None:
        """Interrupt the running runs and cancel the pending permissions of sessions
        whose agent is gone (see ``server.sessions.supervision.recovery``)."""
        services = self.services
        await recover_sessions(services.db, services.writer, services.cluster, only)

    async def end_half_made(self, session_ids: list[str]) -> None:
        """Sessions whose worktree was cut short at a crash end in error."""
        for session_id in session_ids:
            try:
                await self.end_session(session_id, "error", "worktree_failed")
            except (NotFound, SessionNotActive):  # not found or already ended: nothing to do
                log.debug("no session to end for a half-made worktree", exc_info=True)

    async def _sweep_loop(self) -> None:
        while True:
            await anyio.sleep(self.services.settings.idle_sweep_interval)
            try:
                await self.sweep_idle()
            except Exception:
                log.exception("idle sweep failed")

    async def sweep_idle(self) -> list[str]:
        """Complete the sessions idle past the timeout (see ``supervision.idle``)."""

        async def end_idle(session_id: str, cutoff: datetime) -> None:
            await self.end_session(session_id, "completed", "idle_timeout", idle_before=cutoff)

        settings = self.services.settings
        return await sweep_idle(self.services.db, settings.idle_timeout_minutes, end_idle)
