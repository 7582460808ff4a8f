"""Alembic migrations on a real SQLite file (and on PostgreSQL in the second pass), the
connection pragmas, and BEGIN IMMEDIATE for writers (those two SQLite's only)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError, OperationalError

from store import Database, downgrade, open_database, upgrade
from store.models import schema_metadata
from store.search import is_index_object
from tests.store.conftest import sqlite_only

pytestmark = pytest.mark.anyio

CORE_TABLES = {"repos", "sessions", "messages", "runs", "tool_calls", "permissions"}


@pytest.fixture
def db_path(database_url: str) -> Path:
    """The SQLite file (the tests that use it are ``sqlite_only``)."""
    return Path(database_url.removeprefix("sqlite+aiosqlite:///"))


@pytest.fixture
async def database(database_url: str) -> AsyncIterator[Database]:
    db = open_database(database_url)
    try:
        yield db
    finally:
        await db.close()


async def tables(db: Database) -> set[str]:
    async with db.reader_engine.connect() as conn:
        names: list[str] = await conn.run_sync(lambda sync: inspect(sync).get_table_names())
    return set(names) - {"alembic_version"}


async def revision(db: Database) -> str | None:
    async with db.reader_engine.connect() as conn:
        return await conn.run_sync(
            lambda sync: MigrationContext.configure(sync).get_current_revision()
        )


@sqlite_only
async def test_the_database_is_a_real_file(database: Database, db_path: Path) -> None:
    await upgrade(database)
    with sqlite3.connect(db_path) as raw:  # readable by anyone with sqlite3
        on_disk = {
            row[0] for row in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
    assert CORE_TABLES <= on_disk


async def test_upgrade_downgrade_upgrade(database: Database) -> None:
    assert await tables(database) == set()
    await upgrade(database)
    created = await tables(database)
    assert CORE_TABLES <= created
    head = await revision(database)
    assert head is not None

    await upgrade(database)  # at head: nothing to do, nothing breaks
    assert await tables(database) == created

    await downgrade(database)
    assert await tables(database) == set()
    assert await revision(database) is None

    await upgrade(database)
    assert await tables(database) == created
    assert await revision(database) == head


async def test_migrations_match_the_models(database: Database) -> None:
    """The schema the migrations build is the one the models describe."""
    await upgrade(database)

    def diff(sync: Any) -> list[Any]:
        opts = {
            "compare_type": True,
            # the search index's FTS5 tables and expression indexes (store.search)
            "include_name": lambda name, *_: not is_index_object(name),
        }
        context = MigrationContext.configure(sync, opts=opts)
        return list(compare_metadata(context, schema_metadata()))

    async with database.reader_engine.connect() as conn:
        differences = await conn.run_sync(diff)
    assert differences == []


async def test_data_survives_an_upgrade_at_head(database: Database) -> None:
    await upgrade(database)
    async with database.write() as db, db.begin():
        await db.execute(
            text(
                "INSERT INTO repos (id, name, path, is_git_repo, created_at) "
                "VALUES ('r1', 'demo', '/w/demo', TRUE, '2026-01-01 00:00:00.000000')"
            )
        )
    await upgrade(database)
    async with database.read() as db:
        assert (await db.execute(text("SELECT name FROM repos"))).scalar_one() == "demo"


# -- pragmas ---------------------------------------------------------------------------------


async def pragmas(session_factory: Any) -> dict[str, Any]:
    async with session_factory() as db:
        return {
            name: (await db.execute(text(f"PRAGMA {name}"))).scalar_one()
            for name in ("journal_mode", "foreign_keys", "busy_timeout", "synchronous")
        }


@sqlite_only
async def test_pragmas_on_every_connection(database: Database) -> None:
    for factory in (database.write, database.read):
        values = await pragmas(factory)
        assert values["journal_mode"] == "wal"
        assert values["foreign_keys"] == 1
        assert values["busy_timeout"] >= 1000
        assert values["synchronous"] == 1  # NORMAL


@sqlite_only
async def test_a_new_database_has_8k_pages(database: Database) -> None:
    await upgrade(database)
    for factory in (database.write, database.read):
        async with factory() as db:
            assert (await db.execute(text("PRAGMA page_size"))).scalar_one() == 8192


async def test_foreign_keys_are_enforced(database: Database) -> None:
    await upgrade(database)
    with pytest.raises(IntegrityError, match="(?i)foreign key"):
        async with database.write() as db, db.begin():
            await db.execute(
                text(
                    "INSERT INTO sessions (id, repo_id, agent_id, status, created_at, updated_at, "
                    "last_activity_at, last_seq, needs_context, metadata) VALUES ('s1', "
                    "'no-such-repo', "
                    "'default', 'active', '2026-01-01', '2026-01-01', '2026-01-01', 0, FALSE, '{}')"
                )
            )


# -- BEGIN IMMEDIATE ------------------------------------------------------------------------


@sqlite_only
async def test_writer_transactions_take_the_write_lock_at_begin(
    database: Database, db_path: Path
) -> None:
    """A writer holds the lock from BEGIN, before it wrote anything: another connection
    cannot start a write meanwhile (a deferred BEGIN would have let it)."""
    await upgrade(database)
    async with database.write() as db, db.begin():
        await db.execute(text("SELECT count(*) FROM repos"))  # a read only, so far
        other = sqlite3.connect(db_path, timeout=0, isolation_level=None)
        try:
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("BEGIN IMMEDIATE")
        finally:
            other.close()
    async with database.read() as db, db.begin():
        await db.execute(text("SELECT count(*) FROM repos"))
        other = sqlite3.connect(db_path, timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # the reader's deferred BEGIN holds no lock
            other.execute("ROLLBACK")
        finally:
            other.close()


async def read_modify_write(db: Database, times: int) -> None:
    for _ in range(times):
        async with db.write() as session, session.begin():
            value = (await session.execute(text("SELECT n FROM counter"))).scalar_one()
            await (
                anyio.lowlevel.checkpoint()
            )  # let the other writer run between the read and the write
            await session.execute(text("UPDATE counter SET n = :n"), {"n": value + 1})


@sqlite_only
async def test_two_concurrent_writers_never_see_database_is_locked(
    database: Database, db_path: Path
) -> None:
    """Two engines on one file (as two server processes would be): read-then-write
    transactions interleave; with BEGIN IMMEDIATE none fails and no update is lost."""
    await upgrade(database)
    async with database.write() as db, db.begin():
        await db.execute(text("CREATE TABLE counter (n INTEGER NOT NULL)"))
        await db.execute(text("INSERT INTO counter VALUES (0)"))
    second = open_database(f"sqlite+aiosqlite:///{db_path}")
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_modify_write, database, 15)
            tg.start_soon(read_modify_write, second, 15)
    finally:
        await second.close()
    async with database.read() as db:
        assert (await db.execute(text("SELECT n FROM counter"))).scalar_one() == 30


@sqlite_only
async def test_deferred_read_then_write_fails_without_immediate(
    database: Database, db_path: Path
) -> None:
    """Why writers need IMMEDIATE: a deferred transaction that read before another
    connection committed cannot upgrade to a write (SQLITE_BUSY_SNAPSHOT), whatever the
    busy timeout."""
    await upgrade(database)
    async with database.write() as db, db.begin():
        await db.execute(text("CREATE TABLE counter (n INTEGER NOT NULL)"))
        await db.execute(text("INSERT INTO counter VALUES (0)"))
    with pytest.raises(OperationalError, match="locked"):
        async with database.read() as db, db.begin():  # deferred BEGIN
            await db.execute(text("SELECT n FROM counter"))
            other = sqlite3.connect(db_path, isolation_level=None)
            other.execute("UPDATE counter SET n = n + 1")
            other.close()
            await db.execute(text("UPDATE counter SET n = n + 1"))


def test_the_head_read_from_the_scripts_is_alembics() -> None:
    """``upgrade`` skips Alembic when the database is at the head it reads from the
    scripts' text: that head must be Alembic's own."""
    from alembic.script import ScriptDirectory

    from store.migrate import alembic_config, head_revision

    assert head_revision() == ScriptDirectory.from_config(alembic_config()).get_current_head()


async def test_a_database_behind_head_is_migrated(database: Database) -> None:
    await upgrade(database, "0004_stats_indexes")
    await upgrade(database)
    from store.migrate import head_revision

    assert await revision(database) == head_revision()
    assert "attachments" in await tables(database)
