"""A live session: one agent process, its turn state, and the translation of what the
agent sends into stored, published messages."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup, TaskStatus

from agent_bridge import (
    AcpClient,
    AgentExited,
    ProcessSpec,
    ProtocolBroken,
    RpcError,
    TerminalHost,
    Workspace,
    connect_agent,
)
from server import metrics
from server.logs import log_context
from server.sessions.translate import Output, Translator
from server.sessions.turn import PendingPermission, Turn
from server.stream.writer import Draft, new_id
from server.web.errors import ApiError
from store import Run, SessionRecord, utcnow
from store import permissions as permission_store
from store import runs as run_store
from store import sessions as session_store

if TYPE_CHECKING:
    from server.sessions.hub import Hub

__all__ = ["LiveSession", "Restore"]

log = logging.getLogger("agent_sessions.session")


@dataclass
class Restore:
    """How to bring an agent up: a fresh session, or the agent's own earlier one."""

    agent_session_id: str | None = None
    has_history: bool = False


@dataclass
class _Stop:
    run_status: str
    done: anyio.Event = field(default_factory=anyio.Event)


class LiveSession:
    def __init__(self, hub: Hub, record: SessionRecord, repo_path: Path) -> None:
        self.hub = hub
        self.id = record.id
        self.repo_id = record.repo_id
        self.agent_id = record.agent_id
        self.parent_run_id = record.parent_run_id
        self.repo_path = repo_path
        self.agent = hub.agents[record.agent_id]
        self.translator = Translator()
        self.turn: Turn | None = None
        self.permissions: dict[str, PendingPermission] = {}
        self.needs_context = record.needs_context
        self.stderr_tail = ""
        self.cost_seen = 0.0  # the agent's cumulative cost so far (usage_update.cost)
        self._stop: _Stop | None = None
        self.crashed = False
        self._stop_requested = anyio.Event()
        self.finished = anyio.Event()
        self._tg: TaskGroup | None = None
        settings = hub.settings
        self.workspace = Workspace(repo_path, context={"session_id": self.id})
        self.terminals = TerminalHost(
            self.workspace,
            base_env=hub.agent_env(self.agent, self.id),
            context={"session_id": self.id},
        )
        self.client = AcpClient(
            self,
            self.workspace,
            terminals=self.terminals,
            request_timeout=settings.agent_start_timeout,
        )

    # -- lifetime ----------------------------------------------------------------------

    @property
    def stopping(self) -> bool:
        return self._stop is not None

    async def run(self, restore: Restore, *, task_status: TaskStatus[None]) -> None:
        """Own the agent process until stopped or it exits. ``task_status.started()``
        once the agent answered initialize and session/new (or load/resume)."""
        with log_context(session_id=self.id):  # the agent's tasks inherit it
            await self._run(restore, task_status)

    async def _run(self, restore: Restore, task_status: TaskStatus[None]) -> None:
        settings = self.hub.settings
        spec = ProcessSpec(
            argv=self.agent.argv(self.repo_path),
            cwd=self.repo_path,
            env=self.hub.agent_env(self.agent, self.id),
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
                self.client.bind(conn)
                metrics.AGENT_PROCESSES.inc()
                try:
                    await self.hub.start_agent_session(self, restore)
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
                await self.hub.on_agent_exit(self, conn.exit_code, conn.stderr_tail, conn.failure)
        finally:
            with anyio.CancelScope(shield=True):
                await self.terminals.close()  # the agent is gone: so are its commands
            self.hub.forget(self)
            with anyio.CancelScope(shield=True):
                # What the agent detached from its group (setsid, double fork) goes too.
                await self.hub.sweep_orphans()
            await self.hub.cluster.release(self.id)
            self.finished.set()
            if not started:
                log.info("agent start failed", extra={"session_id": self.id})

    async def stop(self, run_status: str) -> None:
        """Cancel any turn (its run ends ``run_status``), stop the agent, and wait."""
        if self._stop is None:
            self._stop = _Stop(run_status)
            self._stop_requested.set()
        with anyio.CancelScope(shield=True):
            await self.finished.wait()

    async def _stop_turn(self, run_status: str) -> None:
        turn = self.turn
        if turn is None:
            return
        turn.final_status = run_status
        await self._cancel_turn(turn)
        with anyio.move_on_after(self.hub.settings.agent_stop_grace):
            await turn.done.wait()

    # -- turns -------------------------------------------------------------------------

    async def start_turn(
        self,
        text: str,
        *,
        max_steps: int,
        step_base: int = 0,
        resumed_from: str | None = None,
        parent_run_id: str | None = None,
    ) -> str:
        """Store the user message and the run, then run the turn in the background.
        Returns the run id once both are committed."""
        if self.turn is not None:
            raise ApiError(409, "turn_in_progress", "A turn is already running in this session.")
        if self._stop is not None or self._tg is None:
            raise ApiError(409, "session_not_active", "The session is stopping.")
        run_id = str(uuid.uuid4())
        self.translator.tools.clear()  # agents reuse tool call ids across turns
        self.translator.last_text = ""
        turn = self.turn = Turn(
            run_id,
            max_steps=max_steps,
            step_base=step_base,
            session_id=self.id,
            cost_base=self.cost_seen,
        )
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
        try:
            if self.needs_context:
                preamble = await self.hub.preamble(self.id)
                if preamble:
                    blocks.insert(0, {"type": "text", "text": preamble})
            now = utcnow()
            run = Run(
                id=run_id,
                session_id=self.id,
                repo_id=self.repo_id,
                agent_id=self.agent_id,
                status="running",
                step_count=step_base,
                max_steps=max_steps,
                parent_run_id=parent_run_id,
                resumed_from=resumed_from,
                created_at=now,
            )

            async def store_run(db: Any) -> None:
                db.add(run)
                await db.flush()
                await session_store.update_session(
                    db, self.id, active_run_id=run_id, needs_context=False
                )

            drafts = [
                Draft("user", {"type": "text", "text": text}, run_id=run_id, step_number=step_base),
                self._run_draft(turn, "running"),
            ]
            await self.hub.writer.submit(self.id, drafts, [store_run]).wait()
        except BaseException:
            self.turn = None
            raise
        self.needs_context = False
        assert self._tg is not None
        self._tg.start_soon(self._run_turn, turn, blocks)
        metrics.TURNS_RUNNING.inc()
        return run_id

    def _run_draft(
        self,
        turn: Turn,
        status: str,
        stop_reason: str | None = None,
        duration_ms: int | None = None,
    ) -> Draft:
        content = {
            "type": "run",
            "runId": turn.run_id,
            "status": status,
            "stopReason": stop_reason,
            "durationMs": duration_ms,
        }
        return Draft("system", content, run_id=turn.run_id, step_number=turn.step_number)

    async def _run_turn(self, turn: Turn, blocks: list[dict[str, Any]]) -> None:
        status, stop_reason, error = "failed", None, None
        try:
            result = await self.client.prompt(blocks)
            stop_reason = str(result.get("stopReason") or "end_turn")
            turn.usage = result.get("usage") if isinstance(result.get("usage"), dict) else None
            cancelled = stop_reason == "cancelled" or turn.cancel_requested
            status = "cancelled" if cancelled else "completed"
        except RpcError as exc:
            error = f"the agent answered the prompt with error {exc.code}: {exc.message}"
        except (AgentExited, ProtocolBroken) as exc:
            error = str(exc)
        finally:
            with anyio.CancelScope(shield=True):
                if turn.final_status is not None:
                    status = turn.final_status
                elif turn.paused:
                    status = "paused"
                await self._finish_turn(turn, status, stop_reason, error)

    async def _finish_turn(
        self, turn: Turn, status: str, stop_reason: str | None, error: str | None
    ) -> None:
        """End the run once: a turn abandoned after cancel is not ended again when the
        agent's late answer (or the stop) finally comes."""
        if turn.finished:
            return
        turn.finished = True
        outputs = self.translator.flush()
        for call_id in self.translator.unfinished_tools():  # never finished: did not complete
            state = self.translator.tools[call_id]
            state.fields["status"] = "cancelled"
            outputs.append(Output("system", state.content(call_id)))
        for pending in list(self.permissions.values()):
            if pending.run_id == turn.run_id:
                self._decide(pending, {"outcome": "cancelled"}, "turn_ended")
        duration = int((time.monotonic() - turn.started) * 1000)
        drafts, ops = self._stage(outputs, turn)
        drafts.append(self._run_draft(turn, status, stop_reason, duration))
        values = {
            "status": status,
            "stop_reason": stop_reason,
            "duration_ms": duration,
            "completed_at": utcnow(),
            "summary": (self.translator.last_text or None) and self.translator.last_text[:500],
            "step_count": turn.step_number,
            "usage": turn.usage,
            "cost": turn.cost(),
            "error_message": error,
        }

        async def close_run(db: Any) -> None:
            await run_store.update_run(db, turn.run_id, **values)
            await session_store.update_session(db, self.id, active_run_id=None)

        try:
            await self.hub.writer.submit(self.id, drafts, [*ops, close_run]).wait()
        finally:
            self.turn = None
            turn.done.set()
            metrics.TURNS_RUNNING.dec()
            log.info(
                "run ended", extra={"session_id": self.id, "run_id": turn.run_id, "status": status}
            )

    async def cancel_turn(self) -> None:
        if self.turn is not None:
            await self._cancel_turn(self.turn)

    async def _cancel_turn(self, turn: Turn) -> None:
        turn.cancel_requested = True
        for pending in list(self.permissions.values()):
            self._decide(pending, {"outcome": "cancelled"}, "turn_cancelled")
        try:
            await self.client.cancel()
        except Exception:  # noqa: BLE001 - the agent may be gone already
            log.info("cancel could not be sent", extra={"session_id": self.id})
        self._tg_start(self._abandon_if_hung, turn)

    def _tg_start(self, func: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> None:
        if self._tg is not None:
            self._tg.start_soon(func, *args)

    async def _abandon_if_hung(self, turn: Turn) -> None:
        """An agent that ignores session/cancel does not keep the turn open forever."""
        with anyio.move_on_after(self.hub.settings.agent_stop_grace * 2):
            await turn.done.wait()
            return
        if self.turn is turn and not turn.done.is_set():
            log.warning(
                "agent ignored session/cancel; ending the run and stopping the agent",
                extra={"session_id": self.id},
            )
            status = turn.final_status or ("paused" if turn.paused else "cancelled")
            await self._finish_turn(turn, status, "cancelled", None)
            if self._stop is None:  # its state is unknown: restart it on the next prompt
                self.needs_context = True
                self._stop = _Stop("cancelled")
                self._stop_requested.set()

    # -- agent → host (ClientCallbacks) -------------------------------------------------

    async def on_session_update(
        self, update: dict[str, Any], raw: dict[str, Any], *, replayed: bool
    ) -> None:
        if replayed:
            return
        turn = self.turn
        outputs = self.translator.translate(update, raw)
        if update.get("sessionUpdate") == "usage_update":
            cost = update.get("cost")
            amount = cost.get("amount") if isinstance(cost, dict) else None
            if isinstance(amount, int | float) and not isinstance(amount, bool):
                self.cost_seen = float(amount)
            if turn is not None:
                turn.note_cost(cost)
        if update.get("sessionUpdate") == "session_info_update" and isinstance(
            update.get("title"), str
        ):
            title = update["title"]

            async def set_title(db: Any) -> None:
                await session_store.update_session(db, self.id, title=title)

            drafts, ops = self._stage(outputs, turn)
            ops.append(set_title)
        else:
            drafts, ops = self._stage(outputs, turn)
        writer = self.hub.writer
        writer.submit(self.id, drafts, ops)
        if writer.over_capacity:
            await writer.wait_capacity()
        if turn is not None and turn.over_budget() and not turn.paused:
            turn.paused = True
            log.info(
                "step budget reached; pausing", extra={"session_id": self.id, "run_id": turn.run_id}
            )
            await self._cancel_turn(turn)

    def _stage(self, outputs: list[Output], turn: Turn | None) -> tuple[list[Draft], list[Any]]:
        """Outputs → drafts for the writer, plus tool-call bookkeeping ops."""
        drafts: list[Draft] = []
        ops: list[Any] = []
        run_id = turn.run_id if turn else None
        for out in outputs:
            draft = Draft(
                out.role, out.content, out.raw, run_id, turn.step_number if turn else None
            )
            if out.content.get("type") == "tool" and turn is not None:
                draft.id = new_id()
                op = turn.tools.record(out.content, draft.id)
                draft.step_number = turn.step_number
                if op is not None:
                    ops.append(op)
            drafts.append(draft)
        return drafts, ops

    async def on_permission_request(
        self, params: dict[str, Any], raw: dict[str, Any]
    ) -> Awaitable[dict[str, Any]]:
        turn = self.turn
        raw_call = params.get("toolCall")
        tool_call: dict[str, Any] = raw_call if isinstance(raw_call, dict) else {}
        call_id = str(tool_call.get("toolCallId", ""))
        options = [o for o in params.get("options") or [] if isinstance(o, dict)]
        request_id = str(uuid.uuid4())
        outputs = self.translator.flush()
        tool_content = self.translator.merge_tool(call_id, tool_call)
        outputs.append(Output("system", tool_content))
        content = {
            "type": "permission",
            "requestId": request_id,
            "toolCallId": call_id,
            "tool": tool_content.get("tool"),
            "options": [
                {"optionId": o.get("optionId"), "name": o.get("name"), "kind": o.get("kind")}
                for o in options
            ],
            "outcome": None,
        }
        outputs.append(Output("system", content, raw))
        pending = PendingPermission(request_id, turn.run_id if turn else None, call_id, content)
        self.permissions[request_id] = pending
        if turn is not None:
            turn.tools.permission_asked(call_id)
        drafts, ops = self._stage(outputs, turn)

        async def insert_permission(db: Any) -> None:
            await permission_store.insert_permission(
                db, request_id, self.id, pending.run_id, call_id, content["options"], utcnow()
            )

        self.hub.writer.submit(self.id, drafts, [*ops, insert_permission])
        if turn is not None and turn.over_budget() and not turn.paused:
            turn.paused = True
            self._tg_start(self._cancel_turn, turn)
        return self._wait_permission(pending)

    async def _wait_permission(self, pending: PendingPermission) -> dict[str, Any]:
        with anyio.move_on_after(self.hub.settings.permission_timeout):
            await pending.decided.wait()
        if not pending.decided.is_set():
            reject = next(
                (
                    o
                    for o in pending.content["options"]
                    if o.get("kind") in ("reject_once", "reject_always")
                ),
                None,
            )
            outcome = (
                {"outcome": "selected", "optionId": reject["optionId"]}
                if reject
                else {"outcome": "cancelled"}
            )
            self._decide(pending, outcome, "timeout")
        metrics.PERMISSION_WAIT_SECONDS.observe(time.monotonic() - pending.asked)
        return pending.outcome or {"outcome": "cancelled"}

    def answer_permission(self, request_id: str, option_id: str) -> anyio.Event:
        """A person's answer; the first one wins. Returns the commit event."""
        pending = self.permissions.get(request_id)
        if pending is None:
            raise ApiError(
                404, "permission_not_found", f"No pending permission request {request_id}."
            )
        if pending.decided.is_set():
            raise ApiError(
                409, "permission_already_decided", "This permission request was already answered."
            )
        if option_id not in {o.get("optionId") for o in pending.content["options"]}:
            raise ApiError.validation(f"optionId {option_id!r} is not one of the offered options.")
        return self._decide(pending, {"outcome": "selected", "optionId": option_id}, "user")

    def _decide(
        self, pending: PendingPermission, outcome: dict[str, Any], reason: str
    ) -> anyio.Event:
        """Record the outcome (in memory at once, in the log through the writer)."""
        if pending.decided.is_set():
            return pending.committed
        pending.outcome = outcome
        pending.decided.set()
        self.permissions.pop(pending.request_id, None)
        if self.turn is not None:
            self.turn.tools.permission_decided(pending.tool_call_id)
        content = {**pending.content, "outcome": outcome, "reason": reason}
        turn = self.turn
        draft = Draft("system", content, None, pending.run_id, turn.step_number if turn else None)
        when = utcnow()

        async def record(db: Any) -> None:
            await permission_store.decide_permission(db, pending.request_id, outcome, when)

        receipt = self.hub.writer.submit(self.id, [draft], [record])
        pending.committed = receipt.committed
        return receipt.committed
