"""The session hub: the registry of live sessions, admission, agent start and restore,
ending sessions, crash handling, startup recovery, the idle sweep and shutdown."""

from __future__ import annotations

import hashlib
import logging
import os
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus

from agent_bridge import (
    AgentExited,
    AgentStartError,
    OrphanSweeper,
    ProtocolBroken,
    RpcError,
    Workspace,
    WorkspaceError,
    agent_environment,
    kill_orphans,
    owner_marker,
    tracked_children,
)
from server import metrics
from server.cluster import Cluster
from server.sessions.agents import AgentConfig
from server.sessions.idle import sweep_idle
from server.sessions.live_session import LiveSession, Restore
from server.sessions.recovery import recover_sessions, status_draft
from server.sessions.transcript import build_transcript, render_preamble
from server.settings import Settings
from server.stream.broker import Broker
from server.stream.writer import Writer
from server.web.errors import ApiError
from store import Database, Repo, SessionRecord, utcnow
from store import messages as message_store
from store import permissions as permission_store
from store import repos as repo_store
from store import runs as run_store
from store import sessions as session_store

__all__ = ["Hub"]

log = logging.getLogger("agent_sessions.hub")
security_log = logging.getLogger("agent_sessions.security")

ORPHAN_SWEEP_INTERVAL = 5.0  # seconds; a session's end sweeps at once


def find_exception(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The first ``kind`` inside ``exc`` or its exception groups."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = find_exception(inner, kind)
            if found is not None:
                return found
    return None


class Hub:
    def __init__(
        self,
        settings: Settings,
        database: Database,
        writer: Writer,
        broker: Broker,
        agents: dict[str, AgentConfig],
        cluster: Cluster,
    ) -> None:
        self.settings = settings
        self.cluster = cluster
        cluster.recover_sessions = self.recover_sessions
        self.db = database
        self.writer = writer
        self.broker = broker
        self.agents = agents
        self.live: dict[str, LiveSession] = {}
        self._locks: defaultdict[str, anyio.Lock] = defaultdict(anyio.Lock)
        self._resuming: dict[str, anyio.Lock] = {}
        self._tg: TaskGroup | None = None
        self.shutting_down = False
        # The marker of this server process in its agents' environment: the database, the
        # node, and this process (pid + start time), so a restart of this node kills only
        # what a dead process of its own left (agent_bridge.orphans).
        self.database_hash = hashlib.sha1(database.url.encode()).hexdigest()[:12]  # noqa: S324 - a label
        self.owner = owner_marker(self.database_hash, cluster.node_id)
        self.orphans = OrphanSweeper(self.owner, tracked_children)

    # -- lifetime ----------------------------------------------------------------------

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            tg.start_soon(self._sweep_loop)
            tg.start_soon(self._orphan_loop)
            task_status.started()
            await anyio.sleep_forever()

    async def shutdown(self) -> None:
        """Cancel turns (runs ``interrupted``), stop every agent, close viewers (1001)."""
        self.shutting_down = True
        self.broker.close_all()
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for live in list(self.live.values()):
                    tg.start_soon(live.stop, "interrupted")
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    def forget(self, live: LiveSession) -> None:
        if self.live.get(live.id) is live:
            del self.live[live.id]

    def agent_env(self, agent: AgentConfig, session_id: str) -> dict[str, str]:
        return agent_environment(os.environ, agent.env, self.owner, session_id)

    async def sweep_orphans(self) -> list[int]:
        """Kill what agents of sessions no longer live here left re-parented to us."""
        return await self.orphans.sweep(set(self.live))

    async def _orphan_loop(self) -> None:
        while True:
            await anyio.sleep(ORPHAN_SWEEP_INTERVAL)
            try:
                await self.sweep_orphans()
            except Exception:
                log.exception("orphan sweep failed")

    async def log_active_count(self, change: str, session_id: str) -> None:
        async with self.db.read() as db:
            count = await session_store.count_active_sessions(db)
        metrics.ACTIVE_SESSIONS.set(count)
        log.info(
            "active sessions: %d of %d (%s)",
            count,
            self.settings.max_concurrent_sessions,
            change,
            extra={"event": "active_count", "session_id": session_id, "active": count},
        )

    # -- starting agents ---------------------------------------------------------------

    async def start_agent_session(self, live: LiveSession, restore: Restore) -> None:
        """initialize → authenticate → session/new (or load/resume), within the start timeout."""
        client, timeout, step = live.client, self.settings.agent_start_timeout, "initialize"
        started = time.perf_counter()
        try:
            with anyio.fail_after(timeout):
                await client.initialize()
                if live.agent.auth_method and client.auth_method_ids:
                    step = "authenticate"
                    await client.authenticate(live.agent.auth_method)
                step = "session/new"
                if restore.agent_session_id and client.can_load:
                    step = "session/load"
                    await client.load_session(restore.agent_session_id)
                    live.cost_seen = await self._last_cost(live.id)
                elif restore.agent_session_id and client.can_resume:
                    step = "session/resume"
                    await client.resume_session(restore.agent_session_id)
                    live.cost_seen = await self._last_cost(live.id)
                else:
                    await client.new_session()
                    live.needs_context = live.needs_context or restore.has_history
        except TimeoutError:
            conn = client.connection
            raise AgentStartError(
                f"the agent did not answer {step} within {timeout:g} s",
                conn.exit_code,
                conn.stderr_tail,
            ) from None
        except (AgentExited, ProtocolBroken):
            conn = client.connection
            with anyio.move_on_after(2):
                await conn.exited.wait()
            raise AgentStartError(
                f"the agent exited during {step} with code {conn.exit_code}",
                conn.exit_code,
                conn.stderr_tail,
            ) from None
        except RpcError as exc:
            conn = client.connection
            hint = (
                " (it requires authentication: set authMethod for this agent in AGENTS_FILE)"
                if exc.code == -32000
                else ""
            )
            raise AgentStartError(
                f"the agent answered {step} with error {exc.code}: {exc.message}{hint}",
                conn.exit_code,
                conn.stderr_tail,
            ) from None
        metrics.AGENT_START_SECONDS.observe(time.perf_counter() - started)
        agent_session_id = client.session_id
        needs_context = live.needs_context
        async with self.db.write() as db, db.begin():
            await session_store.update_session(
                db, live.id, agent_session_id=agent_session_id, needs_context=needs_context
            )

    async def _last_cost(self, session_id: str) -> float:
        """The agent's cumulative cost as last reported (an agent restored with its own
        session keeps counting from there)."""
        async with self.db.read() as db:
            usage = await message_store.last_of_type(db, session_id, "usage")
        cost = usage.content.get("cost") if usage is not None else None
        amount = cost.get("amount") if isinstance(cost, dict) else None
        return (
            float(amount)
            if isinstance(amount, int | float) and not isinstance(amount, bool)
            else 0.0
        )

    async def _start_live(
        self, record: SessionRecord, repo_path: Path, restore: Restore
    ) -> LiveSession:
        if self._tg is None or self.shutting_down:
            raise ApiError(503, "shutting_down", "The server is shutting down.")
        owner = await self.cluster.claim(record.id)
        if owner is not None:
            raise ApiError(
                503,
                "session_owned_elsewhere",
                "Another node runs this session's agent; send the command to it (retry).",
                {"owner": owner},
            )
        live = LiveSession(self, record, repo_path)
        self.live[record.id] = live
        try:
            await self._tg.start(live.run, restore)
        except BaseException as exc:
            self.forget(live)
            await self.cluster.release(record.id)
            found = find_exception(exc, AgentStartError)
            if found is not None:
                raise found from None
            spawn = find_exception(exc, OSError)
            if spawn is not None:
                raise AgentStartError(f"the agent could not be spawned: {spawn}") from None
            raise
        return live

    async def _fail_start(self, record: SessionRecord, exc: AgentStartError) -> ApiError:
        detail = {
            "exitCode": exc.exit_code,
            "stderrTail": exc.stderr_tail,
            "stderr": exc.last_stderr_lines(),
            "message": exc.reason,
        }
        await self._set_status(record.id, "error", "agent_start_failed", detail)
        await self.log_active_count("agent start failed", record.id)
        log.warning("agent start failed: %s", exc.reason, extra={"session_id": record.id})
        return ApiError(502, "agent_start_failed", exc.describe(), detail)

    async def _set_status(
        self, session_id: str, status: str, reason: str, detail: dict[str, Any] | None = None
    ) -> None:
        async def write_status(db: Any) -> None:
            await session_store.update_session(
                db, session_id, status=status, updated_at=utcnow(), active_run_id=None
            )

        await self.writer.submit(
            session_id, [status_draft(status, reason, detail)], [write_status]
        ).wait()

    # -- sessions ----------------------------------------------------------------------

    async def _repo_path(self, repo: Repo, session_id: str | None = None) -> Path:
        try:
            workspace = Workspace(repo.path)
            workspace.check_root()
            if str(workspace.root) != repo.path:
                raise WorkspaceError(repo.path, "replaced")
            Workspace(self.settings.workspace_root).resolve(repo.path)
        except WorkspaceError:
            security_log.warning(
                "repository path refused at use",
                extra={
                    "event": "path_refused",
                    "path": repo.path,
                    "repo_id": repo.id,
                    "session_id": session_id,
                },
            )
            raise ApiError(
                403,
                "path_outside_workspace",
                "The repository's directory was moved or replaced and now leads outside the "
                "workspace.",
            ) from None
        return workspace.root

    async def create_session(
        self,
        repo_id: str,
        agent_id: str | None,
        title: str | None,
        parent_run_id: str | None,
        *,
        forked_from: tuple[str, int] | None = None,
    ) -> SessionRecord:
        agent_id = agent_id or "default"
        if agent_id not in self.agents:
            raise ApiError.not_found("agent", agent_id)
        async with self.db.read() as db:
            repo = await repo_store.get_repo(db, repo_id)
            parent = await run_store.get_run(db, parent_run_id) if parent_run_id else None
        if repo is None:
            raise ApiError.not_found("repo", repo_id)
        if parent_run_id and parent is None:
            raise ApiError.not_found("run", parent_run_id)
        await self._repo_path(repo)  # refuses a repository whose path left the root
        now = utcnow()
        record = SessionRecord(
            id=str(uuid.uuid4()),
            repo_id=repo_id,
            agent_id=agent_id,
            status="active",
            title=title,
            created_at=now,
            updated_at=now,
            last_activity_at=now,
            last_seq=0,
            parent_run_id=parent_run_id,
            needs_context=forked_from is not None,
            forked_from_session_id=forked_from[0] if forked_from else None,
            forked_from_seq=forked_from[1] if forked_from else None,
            meta={},
        )
        limit = self.settings.max_concurrent_sessions
        async with self.db.write() as db, db.begin():
            active = await session_store.insert_session_within_limit(db, record, limit)
        if active is None:
            metrics.REFUSED.inc()
            raise ApiError(
                429,
                "session_limit_reached",
                f"The server already runs its limit of {limit} active sessions. "
                "Wait for one to finish (or complete one) and try again in a minute.",
                {"limit": limit},
                {"Retry-After": "60"},
            )
        await self.log_active_count("session created", record.id)
        self.writer.open_session(record.id, 0)
        return record

    async def start_new(self, record: SessionRecord, repo_path: Path | None = None) -> LiveSession:
        """Start the agent of a just-created session; a failure marks it ``error``."""
        async with self._locks[record.id]:
            try:
                if repo_path is None:
                    async with self.db.read() as db:
                        repo = await repo_store.get_repo(db, record.repo_id)
                    assert repo is not None
                    repo_path = await self._repo_path(repo, record.id)
                live = await self._start_live(
                    record, repo_path, Restore(has_history=record.needs_context)
                )
            except AgentStartError as exc:
                raise await self._fail_start(record, exc) from None
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await self._set_status(
                        record.id, "error", "agent_start_failed", {"message": "interrupted"}
                    )
                raise
            await self.writer.submit(
                record.id, [status_draft("active", "created", {"agentId": record.agent_id})]
            ).wait()
            return live

    async def get_record(self, session_id: str) -> SessionRecord:
        async with self.db.read() as db:
            record = await session_store.get_session(db, session_id)
        if record is None:
            raise ApiError.not_found("session", session_id)
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
                with anyio.CancelScope(shield=True):
                    await live.finished.wait()
                live = self.live.get(record.id)
            if live is not None:
                return live
            record = await self.get_record(record.id)
            if record.status != "active":
                raise ApiError(409, "session_not_active", f"The session is {record.status}.")
            async with self.db.read() as db:
                repo = await repo_store.get_repo(db, record.repo_id)
            assert repo is not None
            repo_path = await self._repo_path(repo, record.id)
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
            raise ApiError(
                409, "session_not_active", f"The session is {record.status}; it takes no prompts."
            )
        return await self.ensure_live(record)

    @asynccontextmanager
    async def resuming(self, run_id: str) -> AsyncIterator[None]:
        """One resume of a run at a time: the check that it was not resumed yet and the
        commit of the run that resumes it happen under this lock, so of two racing resumes
        one is accepted and the other sees ``resumedBy``."""
        lock = self._resuming.setdefault(run_id, anyio.Lock())
        try:
            async with lock:
                yield
        finally:
            if not lock.locked() and lock.statistics().tasks_waiting == 0:
                self._resuming.pop(run_id, None)

    async def prompt(self, session_id: str, text: str, **turn: Any) -> str:
        live = await self.active_live(session_id)
        turn.setdefault("parent_run_id", live.parent_run_id)
        return await live.start_turn(
            text, max_steps=turn.pop("max_steps", self.settings.agent_max_steps), **turn
        )

    async def cancel(self, session_id: str) -> None:
        record = await self.get_record(session_id)
        live = self.live.get(session_id)
        if record.status != "active":
            raise ApiError(409, "session_not_active", f"The session is {record.status}.")
        if live is not None:
            await live.cancel_turn()
        await self.touch(session_id)

    async def touch(self, session_id: str) -> None:
        """Record client activity that stores no message (for the idle sweep)."""
        async with self.db.write() as db, db.begin():
            await session_store.update_session(db, session_id, last_activity_at=utcnow())

    async def answer_permission(self, session_id: str, request_id: str, option_id: str) -> None:
        await self.get_record(session_id)
        live = self.live.get(session_id)
        if live is not None and request_id in live.permissions:
            await live.answer_permission(request_id, option_id).wait()
            return
        async with self.db.read() as db:
            permission = await permission_store.get_permission(db, request_id)
        if permission is None or permission.session_id != session_id:
            raise ApiError(
                404, "permission_not_found", f"No permission request {request_id} in this session."
            )
        raise ApiError(
            409, "permission_already_decided", "This permission request was already answered."
        )

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
                raise ApiError(
                    409, "session_not_active", f"The session is already {record.status}."
                )
            if idle_before is not None and record.last_activity_at >= idle_before:
                raise ApiError(
                    409, "session_active_recently", "The session was used since the sweep began."
                )
            live = self.live.get(session_id)
            if live is not None:
                await live.stop(run_status)
                if live.crashed:
                    return await self.get_record(session_id)
            self.writer.open_session(session_id, record.last_seq)
            await self._set_status(session_id, status, reason)
        await self.log_active_count(f"session {status}: {reason}", session_id)
        return await self.get_record(session_id)

    async def on_agent_exit(
        self, live: LiveSession, exit_code: int | None, stderr_tail: str, failure: str | None
    ) -> None:
        """The agent exited on its own: the session becomes ``error``."""
        reason = "agent_protocol_error" if failure else "agent_exited"
        detail = {"exitCode": exit_code, "stderrTail": stderr_tail}
        if failure:
            detail["message"] = failure
        log.warning(
            "agent exited unexpectedly", extra={"session_id": live.id, "exit_code": exit_code}
        )
        with anyio.CancelScope(shield=True):
            await self._set_status(live.id, "error", reason, detail)
            await self.log_active_count("agent exited", live.id)

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
                    raise ApiError(409, "turn_in_progress", "A turn is running; cancel it first.")
                await live.stop("cancelled")
            async with self.db.write() as db, db.begin():
                await session_store.update_session(
                    db, session_id, needs_context=True, agent_session_id=None
                )
            if during is not None:
                await during()

    async def preamble(self, session_id: str) -> str:
        async with self.db.read() as db:
            rows = await message_store.list_messages(
                db, session_id, message_store.MessageFilter(), limit=None
            )
        transcript = build_transcript(rows)
        return render_preamble(transcript) if transcript else ""

    # -- recovery and the idle sweep -----------------------------------------------------

    async def recover(self) -> None:
        """After a crash: kill agents of the dead server, mark its running runs
        ``interrupted`` and its pending permissions ``cancelled`` (on several nodes:
        only for sessions no live node owns)."""
        await anyio.to_thread.run_sync(
            kill_orphans, self.database_hash, self.cluster.node_id, self.owner
        )
        await self.recover_sessions(None)
        async with self.db.read() as db:
            metrics.ACTIVE_SESSIONS.set(await session_store.count_active_sessions(db))

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
