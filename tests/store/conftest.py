"""The store's tests run on a real SQLite file, and in the second pass of ./scripts/test
(``AGENT_SESSIONS_TEST_PG``) on a fresh PostgreSQL database; what only SQLite has (its
file, pragmas, BEGIN IMMEDIATE) is marked ``sqlite_only``. The ``database_url`` fixture
is tests/conftest.py's."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession

from store import Database
from tests.conftest import PG_SERVER

sqlite_only = pytest.mark.skipif(
    bool(PG_SERVER), reason="SQLite's own file, pragmas and locking (this pass is PostgreSQL)"
)


async def query_plans(
    store: Database, read: Callable[[AsyncSession], Awaitable[object]], marker: str
) -> list[tuple[str, str]]:
    """SQLite's ``EXPLAIN QUERY PLAN`` of each statement ``read`` runs whose SQL holds
    ``marker``: (statement, the plan's details in one line)."""
    statements: list[tuple[str, Any]] = []

    def capture(*args: Any) -> None:  # conn, cursor, statement, parameters, context, many
        statements.append((args[2], args[3]))

    engine = store.reader_engine.sync_engine
    event.listen(engine, "before_cursor_execute", capture)
    try:
        async with store.read() as db:
            await read(db)
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    plans: list[tuple[str, str]] = []
    async with store.reader_engine.connect() as conn:
        for sql, params in statements:
            if marker in sql:
                plan = (await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params)).all()
                plans.append((sql, " ".join(str(row[-1]) for row in plan)))
    return plans
