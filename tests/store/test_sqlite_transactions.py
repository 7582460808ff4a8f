"""SQLite transactions take fewer hand-offs to aiosqlite's thread (store/engine.py): the
``BEGIN`` goes through aiosqlite in one call, and the pool rolls a connection back on
return only when a transaction is still open. What must not change: a locked database
is SQLAlchemy's ``OperationalError``, a transaction never outlives its connection's
return to the pool, and a read transaction is one snapshot."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import exc, text

from store import Database, open_database, upgrade
from store import engine as engine_module
from tests.store.conftest import sqlite_only

pytestmark = [pytest.mark.anyio, sqlite_only]


@pytest.fixture
async def sqlite_db(tmp_path: Path) -> Database:
    db = open_database(f"sqlite+aiosqlite:///{tmp_path / 'hops.db'}")
    await upgrade(db)
    return db


async def test_a_locked_database_is_sqlalchemys_operational_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pragmas = engine_module.sqlite_pragmas
    monkeypatch.setattr(engine_module, "sqlite_pragmas", lambda busy_timeout_ms=0: pragmas(50))
    path = tmp_path / "locked.db"
    db = open_database(f"sqlite+aiosqlite:///{path}")
    await upgrade(db)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's write transaction
    try:
        with pytest.raises(exc.OperationalError, match="locked"):
            async with db.write() as session, session.begin():
                await session.execute(text("SELECT 1"))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    async with db.write() as session, session.begin():  # the lock gone: writes go through
        await session.execute(text("UPDATE repos SET name = name"))
    await db.close()


async def test_a_connection_returns_to_the_pool_without_a_transaction(
    sqlite_db: Database,
) -> None:
    async with sqlite_db.reader_engine.connect() as conn:
        raw = await conn.get_raw_connection()
        aio = raw.dbapi_connection._connection  # type: ignore[union-attr]
        await aio.execute("BEGIN")  # behind SQLAlchemy's back: only the pool's reset ends it
        assert aio.in_transaction
    async with sqlite_db.reader_engine.connect() as conn:
        again = (await conn.get_raw_connection()).dbapi_connection._connection  # type: ignore[union-attr]
        assert again is aio  # the same pooled connection
        assert not again.in_transaction
    async with sqlite_db.read() as session:  # and it begins a transaction as before
        await session.execute(text("SELECT 1"))
        assert aio.in_transaction
    assert not aio.in_transaction
    await sqlite_db.close()


async def test_a_read_transaction_is_one_snapshot(tmp_path: Path, sqlite_db: Database) -> None:
    path = str(sqlite_db.url).split("///", 1)[1]
    async with sqlite_db.read() as session:
        before = (await session.execute(text("SELECT count(*) FROM repos"))).scalar_one()
        other = sqlite3.connect(path, isolation_level=None)
        other.execute(
            "INSERT INTO repos (id, name, path, is_git_repo, created_at)"
            " VALUES ('r1', 'r1', '/r1', 0, '2026-01-01 00:00:00.000000')"
        )
        other.close()
        during = (await session.execute(text("SELECT count(*) FROM repos"))).scalar_one()
    async with sqlite_db.read() as session:
        after = (await session.execute(text("SELECT count(*) FROM repos"))).scalar_one()
    assert (before, during, after) == (before, before, before + 1)
    await sqlite_db.close()
