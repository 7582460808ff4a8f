"""ToolBook and Turn on their own: step numbers, durations on the server's clock less
permission waits, the row writes they hand to the writer, and the run's cost."""

from __future__ import annotations

from typing import Any

import pytest

from server.sessions.live.turn import Turn
from store import Run, ToolCall
from tests.runs.support import Clock

pytestmark = pytest.mark.anyio


class Db:
    """Collects the statements an op executes: (table name, bound values)."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, dict[str, Any]]] = []

    async def execute(self, statement: Any, params: dict[str, Any] | None = None) -> None:
        # A cached statement gets its values as parameters (minus the WHERE's row_id).
        values = dict(params) if params is not None else dict(statement.compile().params)
        values.pop("row_id", None)
        self.writes.append((statement.table.name, values))


@pytest.fixture
def clock() -> Clock:
    return Clock()  # injected into each Turn: anyio and the rest keep the real one


def tool(call_id: str, status: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "tool",
        "toolCallId": call_id,
        "tool": f"T {call_id}",
        "kind": "read",
        "status": status,
        "args": {"id": call_id},
        "result": extra.get("result"),
    }


async def book(turn: Turn, db: Db, call_id: str, status: str, **extra: Any) -> bool:
    op = turn.tools.record(tool(call_id, status, **extra), f"msg-{call_id}-{status}")
    if op is None:
        return False
    await op(db)
    return True


def last_write(db: Db, table: str) -> dict[str, Any]:
    return next(values for name, values in reversed(db.writes) if name == table)


async def test_steps_continue_from_the_base_and_the_run_step_count_follows(clock: Clock) -> None:
    turn, db = Turn("run-1", max_steps=3, step_base=45, session_id="s", clock=clock), Db()
    await book(turn, db, "a", "pending")
    await book(turn, db, "b", "pending")
    await book(turn, db, "a", "in_progress")
    rows = [
        values
        for name, values in db.writes
        if name == ToolCall.__tablename__ and "step_number" in values
    ]
    assert [(r["tool_call_id"], r["step_number"], r["run_id"]) for r in rows] == [
        ("a", 46, "run-1"),
        ("b", 47, "run-1"),
    ]
    steps = [values["step_count"] for name, values in db.writes if name == Run.__tablename__]
    assert steps == [46, 47]  # the run's stepCount is kept true as calls appear
    assert (turn.step_number, turn.over_budget()) == (47, False)
    await book(turn, db, "c", "pending")
    assert (turn.step_number, turn.over_budget()) == (48, True)


async def test_duration_runs_from_in_progress_to_finished(clock: Clock) -> None:
    turn, db = Turn("r", max_steps=10, clock=clock), Db()
    await book(turn, db, "a", "pending")
    clock.advance(5)  # model time before the tool starts: not the tool's
    await book(turn, db, "a", "in_progress")
    clock.advance(0.25)
    await book(turn, db, "a", "completed", result={"ok": True})
    done = last_write(db, ToolCall.__tablename__)
    assert (done["status"], done["duration_ms"], done["output"]) == ("completed", 250, {"ok": True})
    assert done["message_id"] == "msg-a-completed" and done["completed_at"] is not None
    assert not await book(turn, db, "a", "error")  # a finished call stays as it ended


async def test_permission_waits_are_left_out_before_and_after_in_progress(clock: Clock) -> None:
    turn, db = Turn("r", max_steps=10, clock=clock), Db()
    await book(turn, db, "a", "pending")
    turn.tools.permission_asked("a")
    clock.advance(30)
    turn.tools.permission_decided("a")
    await book(turn, db, "a", "in_progress")
    clock.advance(0.1)
    turn.tools.permission_asked("a")  # an agent may ask again mid-run
    clock.advance(60)
    turn.tools.permission_decided("a")
    clock.advance(0.1)
    await book(turn, db, "a", "error", result={"error": "no"})
    assert last_write(db, ToolCall.__tablename__)["duration_ms"] == 200


async def test_a_permission_asked_before_any_update_is_left_out(clock: Clock) -> None:
    """The live session books the permission before the tool message that makes the row."""
    turn, db = Turn("r", max_steps=10, clock=clock), Db()
    turn.tools.permission_asked("bare")
    await book(turn, db, "bare", "pending")
    clock.advance(42)
    turn.tools.permission_decided("bare")
    clock.advance(0.05)
    await book(turn, db, "bare", "completed")  # no in_progress: measured from the row
    assert last_write(db, ToolCall.__tablename__)["duration_ms"] == 50


async def test_a_call_cancelled_while_waiting_on_permission_has_no_wait_in_its_duration(
    clock: Clock,
) -> None:
    turn, db = Turn("r", max_steps=10, clock=clock), Db()
    await book(turn, db, "a", "pending")
    turn.tools.permission_asked("a")
    clock.advance(9)
    await book(turn, db, "a", "cancelled")  # still waiting when the turn ended
    done = last_write(db, ToolCall.__tablename__)
    assert (done["status"], done["duration_ms"]) == ("cancelled", 0)


def test_cost_is_the_change_of_the_cumulative_cost() -> None:
    turn = Turn("r", max_steps=1)
    assert turn.cost() is None
    turn.note_cost({"amount": 1.5, "currency": "USD"})
    turn.note_cost({"amount": "a lot"})  # not a number: ignored
    turn.note_cost({"amount": 2.0, "currency": "USD"})
    assert turn.cost() == {"amount": 0.5, "currency": "USD"}
    known = Turn("r", max_steps=1, cost_base=1.25)
    known.note_cost({"amount": 2.0, "currency": "USD"})
    assert known.cost() == {"amount": 0.75, "currency": "USD"}


async def test_updates_of_one_call_merge_into_one_write_per_commit(clock: Clock) -> None:
    turn = Turn("run-1", max_steps=50, session_id="s", clock=clock)
    db = Db()
    insert = turn.tools.record(tool("c1", "pending"), "m1")
    first = turn.tools.record(tool("c1", "in_progress"), "m2")
    clock.advance(0.5)
    assert turn.tools.record(tool("c1", "in_progress", result={"partial": 1}), "m3") is None
    assert turn.tools.record(tool("c1", "completed", result={"done": True}), "m4") is None
    await insert(db)
    await first(db)  # the writer runs the queued op once: it carries the latest state
    written = last_write(db, "tool_calls")
    assert written["status"] == "completed" and written["output"] == {"done": True}
    assert written["message_id"] == "m4" and written["duration_ms"] == 500
    assert "started_at" in written
    assert [name for name, _ in db.writes].count("tool_calls") == 2  # insert + one update
    await first(db)  # a retried commit writes the same values again
    assert last_write(db, "tool_calls") == written
