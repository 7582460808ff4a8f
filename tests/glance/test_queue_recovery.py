"""Queued prompts live in the server's memory: a run a dead server left ``queued`` is
ended ``cancelled`` by start-up recovery (``cancel_left_over``), and only those of the
sessions asked for."""

from __future__ import annotations

import anyio
import pytest

from server.sessions.supervision.recovery import cancel_left_over
from server.stream.broker import Broker
from server.stream.writer import Writer
from store import Database, Run
from tests.store.test_store import T0

pytestmark = pytest.mark.anyio


async def _runs(store: Database, statuses: dict[str, str]) -> None:
    async with store.write() as db, db.begin():
        for run_id, status in statuses.items():
            db.add(
                Run(
                    id=run_id,
                    session_id="s1",
                    repo_id="r1",
                    agent_id="default",
                    status=status,
                    step_count=0,
                    max_steps=5,
                    created_at=T0,
                )
            )


async def _status(store: Database, run_id: str) -> str:
    async with store.read() as db:
        run = await db.get(Run, run_id)
        assert run is not None
        return run.status


async def test_left_over_queued_runs_are_cancelled(store: Database) -> None:
    await _runs(store, {"q1": "queued", "q2": "queued", "done": "completed"})
    writer = Writer(store, Broker())  # the cancelling is a writer op (CancelQueued)
    async with anyio.create_task_group() as tg:
        tg.start_soon(writer.run)
        assert await cancel_left_over(store, writer, {"another-session"}) == 0
        assert await _status(store, "q1") == "queued"
        assert await cancel_left_over(store, writer, None) == 2
        assert [await _status(store, r) for r in ("q1", "q2", "done")] == [
            "cancelled",
            "cancelled",
            "completed",
        ]
        assert await cancel_left_over(store, writer, None) == 0
        await writer.drain()
        tg.cancel_scope.cancel()
