"""A live session: one agent process, its handshake, its turns (``TurnRunner``), its
permission requests (``PermissionGate``) and elicitations (``ElicitationGate``), and the
translation of what the agent sends into stored, published messages. It is given its
services at construction and never reaches back into the hub: the hub supervises ``run``
and cleans up when it returns."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskStatus

from agent_bridge import (
    SESSION_ENV,
    AcpClient,
    ProcessSpec,
    TerminalHost,
    Workspace,
    connect_agent,
)
from agent_bridge.jsontypes import JsonObject
from server import metrics
from server.logs import log_context
from server.sessions import agent_controls
from server.sessions.agents import AgentConfig
from server.sessions.controls import ControlsState
from server.sessions.elicitation_gate import ElicitationGate
from server.sessions.handshake import Restore, handshake
from server.sessions.live_base import Stop
from server.sessions.pending import PendingRequest
from server.sessions.permission_gate import PermissionGate
from server.sessions.queue import PromptQueue
from server.sessions.services import CLEANUP_SECONDS, Services
from server.sessions.translate import Translator
from server.sessions.turn import Turn
from server.sessions.turn_runner import TurnRunner
from server.sessions.workspaces.service import session_root
from server.stream.writer import Draft
from store import SessionRecord
from store.glance import set_agent_title

__all__ = ["LiveSession", "Restore"]

log = logging.getLogger("agent_sessions.session")


class LiveSession(TurnRunner, PermissionGate, ElicitationGate):
    def __init__(
        self,
        services: Services,
        record: SessionRecord,
        repo_path: Path,
        agent: AgentConfig,
        env: dict[str, str],
    ) -> None:
        self.services = services
        self.id = record.id
        self.repo_id = record.repo_id
        self.agent_id = record.agent_id
        self.parent_run_id = record.parent_run_id
        self.repo_path = repo_path = session_root(services.settings, record, repo_path)
        self.agent = agent
        # Its processes carry the session's id: the orphan sweep finds what they detach.
        self.env = env = {**env, SESSION_ENV: record.id}
        self.translator = Translator()
        self.translator.controls = ControlsState(record.controls)  # as last known
        self.controls_busy = 0  # client changes of the controls on their way to the agent
        self.controls_started = False  # before: control updates are part of the start state
        self.controls_kept = (record.controls, record.agent_config)  # as stored at the start
        self.turn = None
        self.queue = PromptQueue(self)  # prompts waiting for the running turn
        self.pending: dict[str, PendingRequest] = {}
        self.needs_context = record.needs_context
        self.stderr_tail = ""
        self.cost_seen = 0.0  # the agent's cumulative cost so far (usage_update.cost)
        self._stop = None
        # Set when the agent exited on its own (not stopped): how it ended.
        self.crashed = False
        self.exit_code: int | None = None
        self.failure: str | None = None
        self.mcp_refused: list[str] = []  # http/sse MCP servers the agent cannot take
        self._stop_requested = anyio.Event()
        # Set by the supervisor (the hub) once its cleanup after ``run`` is done.
        self.finished = anyio.Event()
        self._tg = None
        self.workspace = Workspace(repo_path, context={"session_id": self.id})
        self.terminals = TerminalHost(self.workspace, base_env=env, context={"session_id": self.id})
        self.client = AcpClient(
            self,
            self.workspace,
            terminals=self.terminals,
            request_timeout=services.settings.agent_start_timeout,
            elicitation=True,
        )

    # -- lifetime ----------------------------------------------------------------------

    @property
    def stopping(self) -> bool:
        return self._stop is not None

    async def run(self, restore: Restore, *, task_status: TaskStatus[None]) -> None:
        """Own the agent process until stopped or it exits. ``task_status.started()``
        once the agent answered initialize and session/new (or load/resume). Returns
        with ``crashed`` set if the agent exited on its own."""
        with log_context(session_id=self.id):  # the agent's tasks inherit it
            await self._run(restore, task_status)

    async def _run(self, restore: Restore, task_status: TaskStatus[None]) -> None:
        settings = self.services.settings
        spec = ProcessSpec(
            argv=self.agent.argv(self.repo_path),
            cwd=self.repo_path,
            env=self.env,
            cgroup=None if self.services.cgroups is None else self.services.cgroups.base,
        )
        crashed = False
        started = False
        try:
            async with connect_agent(
                spec,
                self.client,
                max_line_bytes=settings.max_agent_line_bytes,
                stop_grace=settings.agent_stop_grace,
                polite_stop=lambda _conn: self.client.close_session(),
            ) as conn:
                self.terminals.cgroup = conn.process.cgroup  # its commands join the agent's
                self.client.bind(conn)
                metrics.AGENT_PROCESSES.inc()
                try:
                    await handshake(self, restore)
                    started = True
                    task_status.started()
                    async with anyio.create_task_group() as tg:
                        self._tg = tg
                        async with anyio.create_task_group() as waiters:

                            async def wait_exit() -> None:
                                await conn.exited.wait()
                                waiters.cancel_scope.cancel()

                            async def wait_stop() -> None:
                                await self._stop_requested.wait()
                                waiters.cancel_scope.cancel()

                            waiters.start_soon(wait_exit)
                            waiters.start_soon(wait_stop)
                        if self._stop is not None:
                            await self._stop_turn(self._stop.run_status)
                            tg.cancel_scope.cancel()
                        else:
                            crashed = True  # turns fail by themselves: their requests raise
                finally:
                    metrics.AGENT_PROCESSES.dec()
            self.stderr_tail = conn.stderr_tail
            if crashed:
                self.crashed = True
                self.exit_code, self.failure = conn.exit_code, conn.failure
        finally:
            # The agent is gone: nobody waits for an answer to its questions any more.
            self._cancel_pending("session_ended" if self._stop is not None else "agent_exited")
            with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
                await self.terminals.close()  # the agent is gone: so are its commands
            if not started:
                log.info("agent start failed", extra={"session_id": self.id})

    @property
    def stop_deadline(self) -> float:
        """How long a stop may take: the turn's grace, the agent's polite stop and kill,
        closing its terminals, then the supervisor's cleanup."""
        return self.services.settings.agent_stop_grace * 3 + CLEANUP_SECONDS * 3

    async def stop(self, run_status: str) -> None:
        """Cancel any turn (its run ends ``run_status``), stop the agent, and wait."""
        if self._stop is None:
            self._stop = Stop(run_status)
            self._stop_requested.set()
        with anyio.move_on_after(self.stop_deadline, shield=True):
            await self.finished.wait()
        if not self.finished.is_set():
            log.warning("the agent did not stop in time", extra={"session_id": self.id})

    async def _stop_turn(self, run_status: str) -> None:
        turn = self.turn
        if turn is None:
            return
        turn.final_status = run_status
        await self._cancel_turn(turn)
        with anyio.move_on_after(self.services.settings.agent_stop_grace):
            await turn.done.wait()

    # -- agent → host (ClientCallbacks) -------------------------------------------------

    async def on_session_update(
        self, update: JsonObject, raw: JsonObject, *, replayed: bool
    ) -> None:
        await self.on_session_updates([(update, raw)], replayed=replayed)

    async def on_session_updates(
        self, updates: list[tuple[JsonObject, JsonObject]], *, replayed: bool
    ) -> None:
        """The updates of one read from the agent's pipe: translated and staged one by
        one, submitted to the writer together (one receipt, one timestamp)."""
        if replayed:
            for update, _raw in updates:
                self.translator.controls.apply_update(update)  # load replays them too
            return
        writer = self.services.writer
        drafts: list[Draft] = []
        ops: list[Any] = []
        for update, raw in updates:
            turn = self.turn
            try:
                self._stage_update(update, raw, turn, drafts, ops)
            except Exception:
                log.exception("session/update handler failed", extra={"session_id": self.id})
                continue
            if turn is not None and turn.over_budget() and not turn.paused:
                turn.paused = True
                log.info(
                    "step budget reached; pausing",
                    extra={"session_id": self.id, "run_id": turn.run_id},
                )
                writer.submit(self.id, drafts, ops)
                drafts, ops = [], []
                await self._cancel_turn(turn)
        if drafts or ops:
            writer.submit(self.id, drafts, ops)
        if writer.over_capacity:
            await writer.wait_capacity()

    def _stage_update(
        self,
        update: JsonObject,
        raw: JsonObject,
        turn: Turn | None,
        drafts: list[Draft],
        ops: list[Any],
    ) -> None:
        """Translate one update; add its drafts and ops (in order) to the batch's."""
        outputs, control_ops = agent_controls.from_agent(
            self, self.translator.translate(update, raw)
        )
        kind = update.get("sessionUpdate")
        if kind == "usage_update":
            cost = update.get("cost")
            amount = cost.get("amount") if isinstance(cost, dict) else None
            if isinstance(amount, int | float) and not isinstance(amount, bool):
                self.cost_seen = float(amount)
            if turn is not None:
                turn.note_cost(cost)
        staged, tool_ops = self._stage(outputs, turn)
        drafts += staged
        ops += tool_ops
        if kind == "session_info_update" and isinstance(update.get("title"), str):
            title = update["title"]

            async def set_title(db: Any) -> None:
                await set_agent_title(db, self.id, title)  # never over a person's title

            ops.append(set_title)
        ops += control_ops
