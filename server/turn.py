"""The state of one prompt turn: its run, its tool calls (steps) and their timing, and
the permission requests waiting on a person."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import anyio
from sqlalchemy import insert, update

from store import ToolCall, utcnow

__all__ = ["PendingPermission", "ToolBook", "Turn"]

_FINISHED = ("completed", "error", "cancelled")


@dataclass
class PendingPermission:
    request_id: str
    run_id: str | None
    tool_call_id: str
    content: dict[str, Any]
    asked: float = field(default_factory=time.monotonic)
    decided: anyio.Event = field(default_factory=anyio.Event)
    committed: anyio.Event = field(default_factory=anyio.Event)
    outcome: dict[str, Any] | None = None


@dataclass
class _Call:
    row_id: str
    step: int
    created: float
    started: float | None = None
    waiting_since: float | None = None
    waited: float = 0.0
    finished: bool = False


class ToolBook:
    """One row per tool call of a run; step numbers continue across resumes."""

    def __init__(self, turn: Turn) -> None:
        self._turn = turn
        self._calls: dict[str, _Call] = {}

    def __len__(self) -> int:
        return len(self._calls)

    def permission_asked(self, call_id: str) -> None:
        call = self._calls.get(call_id)
        if call is not None and call.waiting_since is None:
            call.waiting_since = time.monotonic()

    def permission_decided(self, call_id: str) -> None:
        call = self._calls.get(call_id)
        if call is not None and call.waiting_since is not None:
            call.waited += time.monotonic() - call.waiting_since
            call.waiting_since = None

    def record(self, content: dict[str, Any], message_id: str) -> Any:
        """Book a tool message; returns the op that writes its row (or None)."""
        call_id = str(content.get("toolCallId"))
        status = str(content.get("status"))
        now = time.monotonic()
        values: dict[str, Any] = {
            "message_id": message_id,
            "tool_name": content.get("tool"),
            "kind": content.get("kind"),
            "input": content.get("args"),
            "output": content.get("result"),
            "status": "completed" if status == "completed" else status,
        }
        call = self._calls.get(call_id)
        if call is None:
            call = self._calls[call_id] = _Call(str(uuid.uuid4()), self._turn.step_base + len(self._calls) + 1, now)
            values.update(
                id=call.row_id, run_id=self._turn.run_id, session_id=self._turn.session_id or "",
                tool_call_id=call_id, step_number=call.step, created_at=utcnow(),
            )
            insert_values = dict(values)
        else:
            insert_values = None
        if call.finished:
            return None
        if status == "in_progress" and call.started is None:
            call.started = now
            values["started_at"] = utcnow()
        if status in _FINISHED:
            call.finished = True
            began = call.started if call.started is not None else call.created + call.waited
            values["duration_ms"] = max(0, int((now - began) * 1000))
            values["completed_at"] = utcnow()
        if insert_values is not None:
            insert_values.update(values)

            async def insert_row(db: Any) -> None:
                await db.execute(insert(ToolCall).values(**insert_values))
            return insert_row
        row_id = call.row_id

        async def update_row(db: Any) -> None:
            await db.execute(update(ToolCall).where(ToolCall.id == row_id).values(**values))
        return update_row


@dataclass
class Turn:
    run_id: str
    max_steps: int
    step_base: int = 0
    session_id: str | None = None
    started: float = field(default_factory=time.monotonic)
    done: anyio.Event = field(default_factory=anyio.Event)
    cancel_requested: bool = False
    paused: bool = False
    final_status: str | None = None
    usage: dict[str, Any] | None = None
    _cost_first: dict[str, Any] | None = None
    _cost_last: dict[str, Any] | None = None
    tools: ToolBook = field(init=False)

    def __post_init__(self) -> None:
        self.tools = ToolBook(self)

    @property
    def step_number(self) -> int:
        return self.step_base + len(self.tools)

    def over_budget(self) -> bool:
        return len(self.tools) >= self.max_steps

    def note_cost(self, cost: Any) -> None:
        if isinstance(cost, dict) and isinstance(cost.get("amount"), int | float):
            if self._cost_first is None:
                self._cost_first = cost
            self._cost_last = cost

    def cost(self) -> dict[str, Any] | None:
        """The change of the agent's cumulative cost over this run."""
        if self._cost_last is None or self._cost_first is None:
            return None
        return {
            "amount": round(float(self._cost_last["amount"]) - float(self._cost_first.get("amount", 0)), 10),
            "currency": self._cost_last.get("currency"),
        }

