"""A live session: one agent process and its handshake, and the members it has: its
``turns`` (``Turns``), its ``questions`` (permission requests and elicitations, one
mechanism: ``Questions``), its ``client_tools`` (``ClientToolHost``: the calls of client
tools, waiting by the same rules) and its ``controls`` (``Controls``). It translates what the
agent sends into stored, published messages. It is given its services at construction
and never sees the registry or the supervisor: the supervisor runs ``run`` and cleans
up when it returns."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import anyio
import msgspec
from anyio.abc import TaskGroup, TaskStatus
from msgspec.structs import replace

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
from server.sessions.agents.config import AgentConfig
from server.sessions.errors import SandboxUnavailable
from server.sessions.live.agent_numbers import checked_cost
from server.sessions.live.client_tools import ClientToolHost, tools_of
from server.sessions.live.controls import Controls
from server.sessions.live.controls_state import ControlsState
from server.sessions.live.handshake import Restore, handshake
from server.sessions.live.questions import Questions
from server.sessions.live.queue import PromptQueue
from server.sessions.live.staging import stage
from server.sessions.live.translate import Translator
from server.sessions.live.turn import Turn
from server.sessions.live.turns import Turns
from server.sessions.services import CLEANUP_SECONDS, Services
from server.sessions.workspaces.service import session_root
from server.stream.writer import Draft
from store import SessionRecord
from store.operations import SetTitle, WriteOp

__all__ = ["OUT_OF_MEMORY", "LiveSession", "Restore"]

log = logging.getLogger("agent_sessions.session")
# ``failure`` when its cgroup's OOM killer ended the agent (AGENT_MEMORY_MAX): the
# supervisor records the crash with this reason.
OUT_OF_MEMORY = "agent_out_of_memory"


class Stop(msgspec.Struct):
    run_status: str
    done: anyio.Event = msgspec.field(default_factory=anyio.Event)


class LiveSession:
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
        self.needs_context = record.needs_context
        self.stderr_tail = ""
        self.cost_seen = 0.0  # the agent's cumulative cost so far (usage_update.cost)
        self._stop: Stop | None = None
        # Set when the agent exited on its own (not stopped): how it ended.
        self.crashed = False
        self.started = False  # the agent answered the handshake (the supervisor's to know)
        self.exit_code: int | None = None
        self.failure: str | None = None
        self.mcp_refused: list[str] = []  # http/sse MCP servers the agent cannot take
        self._stop_requested = anyio.Event()
        # Set by the supervisor once its cleanup after ``run`` is done.
        self.finished = anyio.Event()
        self._tg: TaskGroup | None = None
        self.workspace = Workspace(repo_path, context={"session_id": self.id})
        self.terminals = TerminalHost(self.workspace, base_env=env, context={"session_id": self.id})
        self.client = AcpClient(
            self,
            self.workspace,
            terminals=self.terminals,
            request_timeout=services.settings.agent_start_timeout,
            elicitation=True,
        )
        self.turns = Turns(self)
        self.queue = PromptQueue(self)  # prompts waiting for the running turn
        self.questions = Questions(
            self.id,
            services.writer,
            services.settings.permission_timeout,
            self.translator,
            self._current_turn,
            self._pause,
        )
        # Client tool calls: questions too (first answer wins, timeout, cancel), asked
        # over the MCP server this process is offered rather than over ACP.
        self.client_tools = ClientToolHost(
            self.id,
            tools_of(record.client_tools),
            services.writer,
            services.settings,
            self._current_turn,
        )
        self.controls = Controls(
            self.id,
            self.translator.controls,
            (record.controls, record.agent_config),  # as stored at the start
            self.client,
            services.writer,
            self._current_turn,
        )

    # -- what the members share ----------------------------------------------------------

    @property
    def turn(self) -> Turn | None:
        """The running turn, if any."""
        return self.turns.current

    def _current_turn(self) -> Turn | None:
        return self.turns.current

    @property
    def pending(self) -> dict[str, Any]:
        """The questions asked and not yet answered, by request id."""
        return self.questions.pending

    @property
    def running(self) -> bool:
        """The agent answered its handshake and the session's task group runs."""
        return self._tg is not None

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> None:
        """Run ``func`` in the session's task group (nothing once it is gone)."""
        if self._tg is not None:
            self._tg.start_soon(func, *args)

    def _pause(self, turn: Turn) -> None:
        self.start_soon(self.turns.cancel, turn)

    def request_stop(self, run_status: str) -> None:
        """Stop the agent (its turn's run ends ``run_status``) without waiting."""
        if self._stop is None:
            self._stop = Stop(run_status)
            self._stop_requested.set()

    async def cancel_turn(self) -> None:
        await self.turns.cancel_current()

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
        argv = self.agent.argv(self.repo_path)
        sandbox = self.services.sandbox  # its wall (server.sandbox); its commands get one too
        if sandbox is not None and (refused := sandbox.refusal()) is not None:
            raise SandboxUnavailable(refused)
        mcp = [[m.command, *m.args] for m in self.agent.mcp_catalog.values() if m.command]
        wall = (
            None
            if sandbox is None
            else await sandbox.wall(
                self.id,
                self.agent_id,
                self.repo_path,
                [argv, *mcp],
                self.env,
                client_tools=bool(self.client_tools.tools),
            )
        )
        # its MCP relay is the agent's own (the terminals' commands get no listener for it)
        self.terminals.sandbox = None if wall is None else replace(wall, mcp_socket=None)
        self.client_tools.isolated = wall is not None and wall.mcp_socket is not None
        spec = ProcessSpec(
            argv=argv,
            cwd=self.repo_path,
            env=self.env,
            cgroup=None if self.services.cgroups is None else await self.services.cgroups.ready(),
            sandbox=wall,
            limits=None if wall is None or sandbox is None else sandbox.limits,
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
                self.terminals.limits = conn.process.terminal_limits()
                self.client.bind(conn)
                metrics.AGENT_PROCESSES.inc()
                try:
                    await self._handshake(restore)
                    started = self.started = True
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
                if conn.process.out_of_memory:  # its cgroup's OOM killer: the cause
                    self.failure = OUT_OF_MEMORY
        finally:
            if sandbox is not None:
                sandbox.close_egress(self.id)
            # The agent is gone: nobody waits for an answer to its questions any more.
            self.questions.cancel("session_ended" if self._stop is not None else "agent_exited")
            self.client_tools.close()
            with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
                await self.terminals.close()  # the agent is gone: so are its commands
            if not started:
                log.info("agent start failed", extra={"session_id": self.id})

    async def _handshake(self, restore: Restore) -> None:
        started = await handshake(
            self.id,
            self.client,
            self.services,
            self.agent,
            self.controls,
            self.client_tools,
            restore,
            self.needs_context,
        )
        self.needs_context = started.needs_context
        self.mcp_refused = started.mcp_refused
        if started.cost_seen is not None:
            self.cost_seen = started.cost_seen

    @property
    def stop_deadline(self) -> float:
        """How long a stop may take: the turn's grace, the agent's polite stop and kill,
        closing its terminals, then the supervisor's cleanup."""
        return self.services.settings.agent_stop_grace * 3 + CLEANUP_SECONDS * 3

    async def stop(self, run_status: str) -> None:
        """Cancel any turn (its run ends ``run_status``), stop the agent, and wait."""
        self.request_stop(run_status)
        with anyio.move_on_after(self.stop_deadline, shield=True):
            await self.finished.wait()
        if not self.finished.is_set():
            log.warning("the agent did not stop in time", extra={"session_id": self.id})

    async def _stop_turn(self, run_status: str) -> None:
        turn = self.turn
        if turn is None:
            return
        turn.final_status = run_status
        await self.turns.cancel(turn)
        with anyio.move_on_after(self.services.settings.agent_stop_grace):
            await turn.done.wait()

    # -- agent → host (ClientCallbacks) -------------------------------------------------

    async def on_permission_request(
        self, params: JsonObject, raw: JsonObject
    ) -> Awaitable[JsonObject]:
        return self.questions.ask_permission(params, raw)

    async def on_elicitation_request(
        self, params: JsonObject, raw: JsonObject
    ) -> Awaitable[JsonObject]:
        return self.questions.ask_elicitation(params, raw)

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
        ops: list[WriteOp] = []
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
                await self.turns.cancel(turn)
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
        ops: list[WriteOp],
    ) -> None:
        """Translate one update; add its drafts and ops (in order) to the batch's."""
        outputs, control_ops = self.controls.from_agent(self.translator.translate(update, raw))
        kind = update.get("sessionUpdate")
        if kind == "usage_update":
            cost = checked_cost(update.get("cost"))
            if cost is not None:
                self.cost_seen = cost["amount"]
            if turn is not None:
                turn.note_cost(cost)
        staged, tool_ops = stage(outputs, turn)
        drafts += staged
        ops += tool_ops
        if kind == "session_info_update" and isinstance(update.get("title"), str):
            ops.append(SetTitle(self.id, update["title"]))
        ops += control_ops
