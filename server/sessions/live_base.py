"""The state a live session's parts share (the session itself, its turns, the questions
the agent waits on a person for), and the bookkeeping they all use: staging translated
outputs as drafts, and asking, waiting on and deciding those questions (one mechanism for
permission requests and elicitations, ``server.sessions.pending``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from types import EllipsisType
from typing import Any

import anyio
from anyio.abc import TaskGroup

from agent_bridge import AcpClient, TerminalHost, Workspace
from agent_bridge.jsontypes import JsonObject
from server.sessions.agents import AgentConfig
from server.sessions.pending import PendingRequest, RequestKind
from server.sessions.queue import PromptQueue
from server.sessions.services import Services
from server.sessions.translate import Output, Translator
from server.sessions.turn import Turn
from server.stream.writer import Draft, new_id
from store import utcnow

__all__ = ["LiveBase"]


@dataclass
class Stop:
    run_status: str
    done: anyio.Event = field(default_factory=anyio.Event)


class LiveBase:
    """Declares the state; ``LiveSession`` sets it up."""

    services: Services
    id: str
    repo_id: str
    agent_id: str
    parent_run_id: str | None
    repo_path: Path
    agent: AgentConfig
    translator: Translator
    turn: Turn | None
    pending: dict[str, PendingRequest]  # by request id: asked, not yet answered
    needs_context: bool
    cost_seen: float
    _stop: Stop | None
    _stop_requested: anyio.Event
    _tg: TaskGroup | None
    workspace: Workspace
    terminals: TerminalHost
    client: AcpClient
    queue: PromptQueue

    async def _cancel_turn(self, turn: Turn) -> None:
        raise NotImplementedError  # TurnRunner's

    def _stage(self, outputs: list[Output], turn: Turn | None) -> tuple[list[Draft], list[Any]]:
        """Outputs → drafts for the writer, plus tool-call bookkeeping ops."""
        drafts: list[Draft] = []
        ops: list[Any] = []
        run_id = turn.run_id if turn else None
        for out in outputs:
            draft = Draft(out.role, out.stored, out.raw, run_id, turn.step_number if turn else None)
            content = out.content
            if content["type"] == "tool" and turn is not None:
                draft.id = new_id()
                op = turn.tools.record(content, draft.id)
                draft.step_number = turn.step_number
                if op is not None:
                    ops.append(op)
            drafts.append(draft)
        return drafts, ops

    def _tg_start(self, func: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> None:
        if self._tg is not None:
            self._tg.start_soon(func, *args)

    def _ask(
        self, pending: PendingRequest, outputs: list[Output], ops: list[Any] | None = None
    ) -> None:
        """Register a question and store its message (``outputs`` end with it)."""
        turn = self.turn
        self.pending[pending.request_id] = pending
        if turn is not None and pending.tool_call_id is not None:
            turn.tools.permission_asked(pending.tool_call_id)  # a person's wait: not tool time
        drafts, tool_ops = self._stage(outputs, turn)
        self.services.writer.submit(self.id, drafts, [*tool_ops, *(ops or [])])

    async def _wait(self, pending: PendingRequest) -> JsonObject:
        """The outcome: the first answer, or the kind's answer after the timeout."""
        with anyio.move_on_after(self.services.settings.permission_timeout):
            await pending.decided.wait()
        if not pending.decided.is_set():
            self._decide(pending, pending.kind.on_timeout(pending), "timeout")
        if pending.kind.observe_wait is not None:
            pending.kind.observe_wait(time.monotonic() - pending.asked)
        return pending.outcome or dict(pending.kind.cancelled)

    def _pending_of(self, kind: RequestKind, request_id: str) -> PendingRequest:
        """The question a person answers: 404 unknown, 409 answered already."""
        pending = self.pending.get(request_id)
        if pending is None or pending.kind is not kind:
            raise kind.not_found(request_id)
        if pending.decided.is_set():
            raise kind.answered()
        return pending

    def _cancel_pending(self, reason: str, run_id: str | None | EllipsisType = ...) -> None:
        """Answer the waiting questions (all, or those of run ``run_id``) as cancelled."""
        for pending in list(self.pending.values()):
            if run_id is ... or pending.run_id == run_id:
                self._decide(pending, dict(pending.kind.cancelled), reason)

    def _decide(self, pending: PendingRequest, outcome: JsonObject, reason: str) -> anyio.Event:
        """Record the outcome (in memory at once, in the log through the writer)."""
        if pending.decided.is_set():
            return pending.committed
        pending.outcome = outcome
        pending.decided.set()
        self.pending.pop(pending.request_id, None)
        if self.turn is not None and pending.tool_call_id is not None:
            self.turn.tools.permission_decided(pending.tool_call_id)
        content = {**pending.content, "outcome": outcome, "reason": reason}
        turn = self.turn
        draft = Draft("system", content, None, pending.run_id, turn.step_number if turn else None)
        record = pending.kind.record
        ops = [record(pending.request_id, outcome, utcnow())] if record is not None else []
        receipt = self.services.writer.submit(self.id, [draft], ops)
        pending.committed = receipt.committed
        return receipt.committed
