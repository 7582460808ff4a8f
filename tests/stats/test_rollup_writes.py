"""The roll-up's tool-call trigger fires only when a counted value changes (store/rollup.py's
WHEN clause): a tool call going pending -> in_progress, or getting output, writes no roll-up
row; finishing in error or with a duration does. Counted through SQLite's
``total_changes()`` (the rows a statement and its triggers wrote), so SQLite only; the
PostgreSQL trigger's WHEN is generated from the same list."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text

from store import Database, Run, ToolCall
from tests.stats.test_rollup import BASE, ready
from tests.store.test_store import session_record


@pytest.fixture
async def database(database_url: str) -> AsyncIterator[Database]:
    if not database_url.startswith("sqlite"):
        pytest.skip("total_changes() is SQLite's")
    db = await ready(database_url)
    try:
        async with db.write() as s, s.begin():
            s.add(session_record("s1"))
            await s.flush()
            s.add(
                Run(
                    id="u1",
                    session_id="s1",
                    repo_id="r1",
                    agent_id="a",
                    status="running",
                    max_steps=50,
                    created_at=BASE,
                )
            )
            await s.flush()
            s.add(
                ToolCall(
                    id="t1",
                    run_id="u1",
                    session_id="s1",
                    tool_call_id="c1",
                    tool_name="read",
                    status="pending",
                    step_number=1,
                    created_at=BASE,
                )
            )
        yield db
    finally:
        await db.close()


async def rows_written(db: Database, statement: str) -> int:
    async with db.write() as s, s.begin():
        before = (await s.execute(text("SELECT total_changes()"))).scalar_one()
        await s.execute(text(statement))
        after = (await s.execute(text("SELECT total_changes()"))).scalar_one()
    return int(after - before)


@pytest.mark.anyio
async def test_uncounted_changes_write_no_roll_up_row(database: Database) -> None:
    set_ = "UPDATE tool_calls SET "
    assert await rows_written(database, set_ + "status='in_progress', started_at=created_at") == 1
    assert await rows_written(database, set_ + "output='\"x\"', status='in_progress'") == 1
    assert await rows_written(database, set_ + "status='completed'") == 1
    assert await rows_written(database, "UPDATE runs SET step_count=4") == 1


@pytest.mark.anyio
async def test_counted_changes_move_the_roll_up(database: Database) -> None:
    # 8 roll-up rows per tool call (day and hour, by agent and/or repository or neither)
    assert await rows_written(database, "UPDATE tool_calls SET status='error'") == 1 + 8
    assert await rows_written(database, "UPDATE tool_calls SET status='completed'") == 1 + 8
    assert await rows_written(database, "UPDATE tool_calls SET duration_ms=12") == 1 + 8
    assert await rows_written(database, "UPDATE tool_calls SET tool_name='edit'") == 1 + 16
