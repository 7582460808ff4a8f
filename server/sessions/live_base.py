"""The state a live session's parts share (the session itself, its turns, its permission
requests), and the bookkeeping they all use: staging translated outputs as drafts and
recording a permission's outcome."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from agent_bridge import AcpClient, TerminalHost, Workspace
from server.contents import PermissionContent, PermissionOutcome, as_json
from server.sessions.agents import AgentConfig
from server.sessions.services import Services
from server.sessions.translate import Output, Translator
from server.sessions.turn import PendingPermission, Turn
from server.stream.writer import Draft, new_id
from store import permissions as permission_store
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
    permissions: dict[str, PendingPermission]
    needs_context: bool
    cost_seen: float
    _stop: Stop | None
    _stop_requested: anyio.Event
    _tg: TaskGroup | None
    workspace: Workspace
    terminals: TerminalHost
    client: AcpClient

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

    def _decide(
        self, pending: PendingPermission, outcome: PermissionOutcome, reason: str
    ) -> anyio.Event:
        """Record the outcome (in memory at once, in the log through the writer)."""
        if pending.decided.is_set():
            return pending.committed
        pending.outcome = outcome
        pending.decided.set()
        self.permissions.pop(pending.request_id, None)
        if self.turn is not None:
            self.turn.tools.permission_decided(pending.tool_call_id)
        decided: PermissionContent = {**pending.content, "outcome": outcome, "reason": reason}
        turn = self.turn
        step = turn.step_number if turn else None
        draft = Draft("system", as_json(decided), None, pending.run_id, step)
        when = utcnow()

        async def record(db: Any) -> None:
            await permission_store.decide_permission(db, pending.request_id, as_json(outcome), when)

        receipt = self.services.writer.submit(self.id, [draft], [record])
        pending.committed = receipt.committed
        return receipt.committed
