"""The state of one prompt turn: its run, its tool calls (steps) and their timing."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import anyio
import msgspec

from agent_bridge.jsontypes import JsonObject, JsonValue
from server.contents import Cost, ToolContent
from store import utcnow
from store.hot_batch import ToolCallInsert, ToolCallUpdate
from store.runs import ToolCallValues

__all__ = ["ToolBook", "Turn"]

_FINISHED = ("completed", "error", "cancelled")


class _Call(msgspec.Struct):
    row_id: str
    step: int
    created: float
    started: float | None = None
    waiting_since: float | None = None
    waited: float = 0.0
    finished: bool = False

    def stop_waiting(self, now: float) -> None:
        if self.waiting_since is not None:
            self.waited += now - self.waiting_since
            self.waiting_since = None

    def duration_ms(self, now: float) -> int:
        """Wall-clock time from in_progress (else from the first update) to ``now``,
        less the time spent waiting on a person's permission in between."""
        self.stop_waiting(now)
        began = self.started if self.started is not None else self.created
        return max(0, round((now - began - self.waited) * 1000))


class ToolBook:
    """One row per tool call of a run; step numbers continue across resumes.

    Durations are measured here, on the server's monotonic clock: from the update that
    says ``in_progress`` to the one that finishes the call, less any permission wait in
    between (a wait before ``in_progress`` is outside that span anyway). A permission
    request may name a call before any update did (``_asked_early``)."""

    def __init__(self, turn: Turn) -> None:
        self._turn = turn
        self._calls: dict[str, _Call] = {}
        self._asked_early: set[str] = set()
        self._dirty: dict[str, ToolCallValues] = {}  # row id -> values its queued op will write

    def __len__(self) -> int:
        return len(self._calls)

    def permission_asked(self, call_id: str) -> None:
        call = self._calls.get(call_id)
        if call is None:
            self._asked_early.add(call_id)  # its row is made by the message that follows
        elif call.waiting_since is None:
            call.waiting_since = self._turn.clock()

    def permission_decided(self, call_id: str) -> None:
        self._asked_early.discard(call_id)
        call = self._calls.get(call_id)
        if call is not None:
            call.stop_waiting(self._turn.clock())

    def record(self, content: ToolContent, message_id: str) -> Any:
        """Book a tool message; returns the op that writes its row (or None)."""
        call_id = str(content["toolCallId"])
        status = str(content["status"])
        now = self._turn.clock()
        values: ToolCallValues = {
            "message_id": message_id,
            "tool_name": content["tool"],
            "kind": content["kind"],
            "input": content["args"],
            "output": content["result"],
            "status": status,
        }
        call = self._calls.get(call_id)
        insert_values: ToolCallValues | None = None
        if call is None:
            call = self._calls[call_id] = self._new_call(call_id, now)
            insert_values = {
                "id": call.row_id,
                "run_id": self._turn.run_id,
                "session_id": self._turn.session_id or "",
                "tool_call_id": call_id,
                "step_number": call.step,
                "created_at": utcnow(),
            }
        if call.finished:
            return None
        if status == "in_progress" and call.started is None:
            call.started = now
            call.waited = 0.0  # only waits after in_progress count against the span
            if call.waiting_since is not None:
                call.waiting_since = now
            values["started_at"] = utcnow()
        if status in _FINISHED:
            call.finished = True
            values["duration_ms"] = call.duration_ms(now)
            values["completed_at"] = utcnow()
        if insert_values is not None:
            return ToolCallInsert({**insert_values, **values}, self._turn.run_id, call.step)
        return self._coalesced_update(call.row_id, values)

    def _coalesced_update(self, row_id: str, values: ToolCallValues) -> Any:
        """Updates of one tool call merge until its op runs in the writer's transaction:
        one UPDATE per call per commit, carrying its latest state."""
        pending = self._dirty.get(row_id)
        if pending is not None:  # an op for this row is already queued: it will take these too
            pending.update(values)
            return None
        self._dirty[row_id] = values.copy()
        taken: ToolCallValues = {}

        def take() -> ToolCallValues:
            if not taken:  # the first attempt takes the merged values; a retry reuses them
                taken.update(self._dirty.pop(row_id))
            return taken

        return ToolCallUpdate(row_id, take)

    def _new_call(self, call_id: str, now: float) -> _Call:
        call = _Call(str(uuid.uuid4()), self._turn.step_base + len(self._calls) + 1, now)
        if call_id in self._asked_early:
            self._asked_early.discard(call_id)
            call.waiting_since = now
        return call


class Turn:
    """One prompt turn's run: its budget, its tool calls, its usage and cost."""

    def __init__(
        self,
        run_id: str,
        max_steps: int,
        step_base: int = 0,
        session_id: str | None = None,
        cost_base: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.run_id = run_id
        self.max_steps = max_steps
        self.step_base = step_base
        self.session_id = session_id
        # The agent's cumulative cost (usage_update.cost.amount) before this run, when the
        # caller knows it; without it the change is measured from the run's first report.
        self.cost_base = cost_base
        self.clock = clock  # the monotonic clock durations are measured on (tests inject it)
        self.started = clock()
        self.done = anyio.Event()
        self.cancel_requested = False
        self.finished = False  # the run's end is stored (or being stored)
        self.paused = False
        self.final_status: str | None = None
        self.usage: JsonObject | None = None  # the agent's last usage report, as it sent it
        self._cost_first: JsonObject | None = None  # its first cost with an amount
        self._cost_last: JsonObject | None = None  # ({amount, currency})
        self.tools = ToolBook(self)

    @property
    def step_number(self) -> int:
        return self.step_base + len(self.tools)

    def over_budget(self) -> bool:
        return len(self.tools) >= self.max_steps

    def note_cost(self, cost: JsonValue) -> None:
        amount = cost.get("amount") if isinstance(cost, dict) else None
        if isinstance(amount, int | float) and not isinstance(amount, bool):
            if self._cost_first is None:
                self._cost_first = cost
            self._cost_last = cost

    def cost(self) -> Cost | None:
        """The change of the agent's cumulative cost over this run."""
        if self._cost_last is None or self._cost_first is None:
            return None
        base = self.cost_base if self.cost_base is not None else float(self._cost_first["amount"])
        return {
            "amount": round(float(self._cost_last["amount"]) - base, 10),
            "currency": self._cost_last.get("currency"),
        }
