"""One engine factory for SQLite (aiosqlite) and PostgreSQL (asyncpg).

SQLite gets WAL, ``synchronous=NORMAL``, ``busy_timeout`` and ``foreign_keys`` on every
connection. Two engines share the file: the writer engine begins every transaction with
``BEGIN IMMEDIATE`` (a deferred transaction that later upgrades to a write fails with
"database is locked" under concurrency); the reader engine uses plain deferred
transactions so reads never wait on the writer. PostgreSQL uses one engine for both.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import msgspec
import orjson
from sqlalchemy import event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.util.concurrency import await_

__all__ = ["SQLITE_WAL_LIMIT_BYTES", "Database", "open_database", "sqlite_pragmas"]

SQLITE_BUSY_TIMEOUT_MS = 30_000
SQLITE_PAGE_SIZE = 8192  # a new database's (see _sqlite_pragmas)
# What the WAL file is cut back to when a writer starts it over after a complete
# checkpoint. With checkpoints off the commit path (store/checkpoints.py) a flood never
# lets the WAL restart, so it grows (hundreds of MB in a long flood of tool updates)
# and, without a limit, keeps that size on disk for good.
SQLITE_WAL_LIMIT_BYTES = 64 * 1024 * 1024
_PING = text("SELECT 1")


def _json_dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def sqlite_pragmas(busy_timeout_ms: int = SQLITE_BUSY_TIMEOUT_MS) -> tuple[str, ...]:
    """The settings every connection to the database file gets (the engines', the hot
    writer's and the bench's raw limit), as ``PRAGMA`` arguments in order."""
    return (
        "journal_mode=WAL",
        "synchronous=NORMAL",
        f"busy_timeout={busy_timeout_ms}",
        "foreign_keys=ON",
        f"journal_size_limit={SQLITE_WAL_LIMIT_BYTES}",
    )


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # Let SQLAlchemy's begin event issue BEGIN itself (the pysqlite recipe).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    # A new database's page size (before WAL mode writes its header; a no-op on an existing
    # file). A ~5 KB tool update's row (content and raw frame, ~10.5 KB) takes two overflow
    # pages of 4 KB or one of 8 KB (besides its leaf cell): fewer pages, WAL frames (two
    # writes each) and checkpoint copies per row: the writer's thread does less per tool
    # update, and text updates cost the same (bench/results/notes.md).
    cursor.execute(f"PRAGMA page_size={SQLITE_PAGE_SIZE}")
    for pragma in sqlite_pragmas():
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def _reset_sqlite(dbapi_connection: Any, _record: Any, state: Any) -> None:
    """The pool's rollback on return, only when a transaction is open: a session's close
    has rolled back already (SQLAlchemy's own reset would roll back again, one more
    hand-off to aiosqlite's thread for every transaction). ``_connection`` is the
    aiosqlite connection under SQLAlchemy's adapter (the only async SQLite driver)."""
    if state.asyncio_safe and dbapi_connection._connection.in_transaction:
        dbapi_connection.rollback()


def _make_engine(url: str, *, immediate: bool, **kwargs: Any) -> AsyncEngine:
    sqlite = make_url(url).get_backend_name() == "sqlite"
    if sqlite:
        kwargs["pool_reset_on_return"] = None  # _reset_sqlite does it
    engine = create_async_engine(
        url, json_serializer=_json_dumps, json_deserializer=orjson.loads, **kwargs
    )
    if sqlite:
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        event.listen(engine.sync_engine, "reset", _reset_sqlite)
        begin = "BEGIN IMMEDIATE" if immediate else "BEGIN"

        def _begin(conn: Any) -> None:
            # One hand-off to aiosqlite's thread: exec_driver_sql takes three (a cursor,
            # the statement, the cursor's close), out of ~9 for a one-SELECT read.
            try:
                await_(conn.connection.dbapi_connection._connection.execute(begin))
            except sqlite3.Error as error:  # wrapped as exec_driver_sql would wrap it
                raise DBAPIError.instance(begin, None, error, sqlite3.Error) from error

        event.listen(engine.sync_engine, "begin", _begin)
    return engine


class Database(msgspec.Struct):
    """The engines and session factories of one database."""

    url: str
    writer_engine: AsyncEngine
    reader_engine: AsyncEngine
    write: async_sessionmaker[AsyncSession]
    read: async_sessionmaker[AsyncSession]

    @property
    def dialect(self) -> str:
        return self.writer_engine.dialect.name

    async def ping(self) -> None:
        """One round trip on a reader connection; raises when the database does not answer."""
        async with self.read() as db:
            await db.execute(_PING)

    async def close(self) -> None:
        await self.writer_engine.dispose()
        if self.reader_engine is not self.writer_engine:
            await self.reader_engine.dispose()


def open_database(url: str) -> Database:
    """Build the engines for ``url``; nothing connects until first use."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        writer = _make_engine(url, immediate=True, pool_size=1, max_overflow=0)
        reader = _make_engine(url, immediate=False, pool_size=4, max_overflow=4)
    else:
        from store.models import postgresql_options

        postgresql_options()
        writer = _make_engine(url, immediate=False, pool_size=10, max_overflow=10)
        reader = writer
    return Database(
        url=url,
        writer_engine=writer,
        reader_engine=reader,
        write=async_sessionmaker(writer, expire_on_commit=False),
        read=async_sessionmaker(reader, expire_on_commit=False),
    )
