"""Cursor pages of runs, sessions and tool calls: every row exactly once, in order, also
when rows share a timestamp (or a step); and on SQLite a deep page is an index range
search from the cursor, not a scan from the first row (scripts/bench-scale measured a
runs page 5.6x dearer at 200 000 runs than at 11 000 when it was)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from store import Database, Run, ToolCall
from store import runs as run_store
from store import sessions as session_store
from tests.store.conftest import query_plans, sqlite_only
from tests.store.test_store import T0, session_record

pytestmark = pytest.mark.anyio


def run_row(ident: str, seconds: int) -> Run:
    return Run(
        id=ident,
        session_id="s1",
        repo_id="r1",
        agent_id="default",
        status="completed",
        step_count=0,
        max_steps=50,
        created_at=T0 + timedelta(seconds=seconds),
    )


def call_row(ident: str, step: int) -> ToolCall:
    return ToolCall(
        id=ident,
        run_id="run-00",
        session_id="s1",
        tool_call_id=f"tc-{ident}",
        status="completed",
        step_number=step,
        created_at=T0,
    )


async def fill(store: Database) -> None:
    """12 runs, 4 sessions, 9 tool calls; each kind with ties on its sort key."""
    async with store.write() as db, db.begin():
        db.add_all(run_row(f"run-{n:02d}", n // 3) for n in range(12))
        db.add_all(session_record(f"s-{n}", at=T0 + timedelta(seconds=n // 2)) for n in range(4))
    async with store.write() as db, db.begin():
        db.add_all(call_row(f"c-{n}", n // 3) for n in range(9))


async def test_cursor_pages_give_every_row_once_in_order_across_ties(store: Database) -> None:
    await fill(store)
    async with store.read() as db:
        seen: list[str] = []
        before = None
        while True:
            page = await run_store.list_runs(db, run_store.RunFilter(), limit=5, before=before)
            seen += [r.id for r in page]
            if len(page) < 5:
                break
            before = (page[-1].created_at, page[-1].id)
        everything = await run_store.list_runs(db, run_store.RunFilter(), limit=100, before=None)
        assert seen == [r.id for r in everything] and len(seen) == 12

        sessions: list[str] = []
        cursor = None
        while True:
            rows, total = await session_store.list_sessions(
                db, session_store.SessionFilter(), limit=2, before=cursor
            )
            sessions += [r.id for r in rows]
            if len(rows) < 2:
                break
            cursor = (rows[-1].created_at, rows[-1].id)
        assert sessions == ["s-3", "s-2", "s1", "s-1", "s-0"] and total == 5

        calls: list[str] = []
        after = None
        while True:
            batch = await run_store.list_tool_calls(
                db, "run-00", tool_name=None, statuses=(), limit=4, after=after
            )
            calls += [c.id for c in batch]
            if len(batch) < 4:
                break
            after = (batch[-1].step_number, batch[-1].id)
        assert calls == [f"c-{n}" for n in range(9)]


@sqlite_only
async def test_a_deep_cursor_page_searches_its_index_from_the_cursor(store: Database) -> None:
    await fill(store)

    async def read(db: AsyncSession) -> None:
        await run_store.list_runs(db, run_store.RunFilter(), limit=5, before=(T0, "run-01"))
        await session_store.list_sessions(
            db, session_store.SessionFilter(), limit=2, before=(T0, "s-1")
        )
        await run_store.list_tool_calls(
            db, "run-00", tool_name=None, statuses=(), limit=4, after=(1, "c-3")
        )

    plans = await query_plans(store, read, "ORDER BY")
    assert len(plans) == 3
    for sql, details in plans:
        assert "SEARCH" in details and "SCAN" not in details, (sql, details)
