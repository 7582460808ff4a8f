"""The hot write path: the writer's group commit straight through the driver.

Migrations, reads and every other write go through SQLAlchemy; the rows the writer
commits most (messages, the session's activity stamp, tool-call rows) go here instead:
pre-encoded rows, one ``executemany`` per statement per batch, on a connection of their
own that only the writer's thread uses. The rows stored are exactly what SQLAlchemy
would store (same JSON text, same timestamp text on SQLite, 0/1 booleans), so readers
through the ORM see no difference.

Why: profiles of a flood showed SQLAlchemy's executemany and the aiosqlite hand-offs as
the largest part of the event loop's time per update after parsing: bind processors per
row per column (JSON, the UTC datetime decorator, the datetime format, booleans),
statement compile-cache lookups, and a dozen thread hops per transaction
(bench/results/notes.md has the figures).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from itertools import chain
from typing import Any

import anyio
import anyio.to_thread
import orjson
from msgspec.structs import astuple
from sqlalchemy.engine import make_url

from store.checkpoints import Checkpointer
from store.engine import SQLITE_BUSY_TIMEOUT_MS, sqlite_pragmas
from store.hot_batch import (
    JSON_TOOL_COLUMNS,
    STEP_COUNT,
    HotBatch,
    HotWriter,
    ToolCallInsert,
    ToolCallUpdate,
    check_tool_columns,
)
from store.hot_writes_pg import PgHotWriter
from store.message_row import MESSAGE_COLUMNS, MessageRow, sqlite_stamp
from store.search import FTS_ADD

__all__ = [
    "INLINE_ROWS",
    "ROWS_PER_INSERT",
    "SqliteHotWriter",
    "hot_writer_for",
]

_NOTE_ACTIVITY = "UPDATE sessions SET last_seq=?, updated_at=?, last_activity_at=? WHERE id=?"
_BUSY = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
# A batch this small (paced updates: one or a few rows) is committed on the event loop's
# thread when the write lock is free: the hand-off to the writer's thread and back (two
# thread wake-ups, a self-pipe write) costs more than the commit itself.
INLINE_ROWS = 8
# The writer's thread commits a flood's batches (up to the writer's MAX_BATCH_ROWS, many
# MB of tool updates). With SQLite's default page cache (2 MB) such a transaction spills
# dirty pages into the WAL before its COMMIT and writes the B-tree pages it touches again
# after (a profile of a tool-update flood had the writer's thread in
# sqlite3PcacheFetchStress). With room for the batch, each page goes to the WAL once, at
# COMMIT. The cache grows to this only while such batches are written (the thread's
# connection).
WRITER_CACHE_KIB = 32768

_COLUMN_LIST = ", ".join(MESSAGE_COLUMNS)
_ROW_MARKS = "(" + ",".join("?" * len(MESSAGE_COLUMNS)) + ")"
_INSERT_MESSAGES = f"INSERT INTO messages ({_COLUMN_LIST}) VALUES {_ROW_MARKS}"  # noqa: S608 - constant columns
# A flood's batch goes in as INSERTs of this many rows each (the rest one by one). The
# sqlite3 module gives up the GIL around each statement's step and takes it back after:
# an executemany of one-row INSERTs takes the GIL back once a row, and while the event
# loop's thread runs Python each of those waits for it to let go; with many rows a
# statement the writer's thread waits far less often. 64 rows of 12 columns: 768
# parameters, under SQLite's oldest default limit (999).
ROWS_PER_INSERT = 64
_INSERT_MESSAGE_ROWS = (
    f"INSERT INTO messages ({_COLUMN_LIST}) VALUES {','.join([_ROW_MARKS] * ROWS_PER_INSERT)}"  # noqa: S608 - constant columns
)


def _sqlite_value(column: str, value: Any) -> Any:
    if value is None:
        return None
    if column in JSON_TOOL_COLUMNS:
        return orjson.dumps(value).decode()
    if isinstance(value, datetime):
        return sqlite_stamp(value)
    return value


class SqliteHotWriter:
    """The writer's own sqlite3 connections: one used on the writer's thread
    (``check_same_thread`` is off since anyio's worker thread may change), one on the
    event loop's thread for small batches. ``commit`` calls never overlap (the writer has
    one commit in flight at a time), so neither connection waits for the other's lock."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._conn: sqlite3.Connection | None = None
        self._inline: sqlite3.Connection | None = None
        self._statements: dict[tuple[str, tuple[str, ...]], str] = {}
        self._thread = anyio.CapacityLimiter(1)
        self._checkpoints = Checkpointer(path)  # neither connection checkpoints itself

    def _connect(self, *, busy_timeout_ms: int) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        for pragma in sqlite_pragmas(busy_timeout_ms):  # the SQLAlchemy engines' settings
            conn.execute(f"PRAGMA {pragma}")
        conn.execute("PRAGMA wal_autocheckpoint=0")  # store/checkpoints.py does it
        return conn

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self._connect(busy_timeout_ms=SQLITE_BUSY_TIMEOUT_MS)
            # the writer's thread: room for a whole batch (WRITER_CACHE_KIB)
            self._conn.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
        return self._conn

    def _inline_connection(self) -> sqlite3.Connection:
        if self._inline is None:  # never waits for a lock
            self._inline = self._connect(busy_timeout_ms=0)
        return self._inline

    async def commit(self, batch: HotBatch, announce: tuple[str, list[str]] | None) -> None:
        """Write ``batch`` on the writer's thread (no NOTIFY on SQLite: ``announce`` is
        None); a batch of at most ``INLINE_ROWS`` rows on the calling thread when the
        database's write lock is free at once."""
        assert announce is None
        if len(batch.messages) + len(batch.tools) <= INLINE_ROWS and self._commit_inline(batch):
            return
        await anyio.to_thread.run_sync(self.commit_sync, batch, limiter=self._thread)

    def _commit_inline(self, batch: HotBatch) -> bool:
        """``commit_sync`` without waiting for the write lock: False, with nothing done,
        when another connection holds it (the event loop must never wait on it: the
        holder may be a transaction the loop itself drives)."""
        conn = self._inline_connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode in _BUSY:
                return False
            raise
        self._write(conn, batch)
        return True

    def commit_sync(self, batch: HotBatch) -> None:
        """Write ``batch`` in one transaction (``BEGIN IMMEDIATE`` … ``COMMIT``); on any
        error roll back and raise."""
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        self._write(conn, batch)
        self._checkpoints.cap(conn)

    def _write(self, conn: sqlite3.Connection, batch: HotBatch) -> None:
        """The transaction begun: write ``batch`` and commit; on any error roll back and
        raise."""
        try:
            if batch.messages:
                _insert_messages(conn, batch.messages)
            if batch.finals:  # a turn's final texts: their search index rows (store.search)
                conn.executemany(FTS_ADD, batch.finals)
            if batch.activity:
                conn.executemany(
                    _NOTE_ACTIVITY,
                    [
                        (seq, when, when, session_id)
                        for session_id, (seq, when) in batch.activity.items()
                    ],
                )
            self._tools(conn, batch.tools)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self._checkpoints.wrote(len(batch.messages) + len(batch.tools))

    def _tools(
        self, conn: sqlite3.Connection, ops: Sequence[ToolCallInsert | ToolCallUpdate]
    ) -> None:
        """Tool-call rows in op order, consecutive statements of one shape in one
        ``executemany``."""
        sql: str | None = None
        params: list[tuple[Any, ...]] = []
        for op in ops:
            if isinstance(op, ToolCallInsert):
                values = op.row
                key = ("insert", tuple(values))
                row = tuple(_sqlite_value(column, value) for column, value in values.items())
            else:
                values = op.take()
                key = ("update", tuple(values))
                row = (*(_sqlite_value(c, v) for c, v in values.items()), op.row_id)
            statement = self._statements.get(key) or self._statement(key)
            if statement != sql:
                if sql is not None and params:
                    conn.executemany(sql, params)
                sql, params = statement, []
            params.append(row)
            if isinstance(op, ToolCallInsert):
                conn.executemany(sql, params)
                conn.execute(STEP_COUNT, (op.step, op.run_id))
                sql, params = None, []
        if sql is not None and params:
            conn.executemany(sql, params)

    def _statement(self, key: tuple[str, tuple[str, ...]]) -> str:
        kind, columns = key
        check_tool_columns(columns)
        if kind == "insert":
            marks = ",".join("?" * len(columns))
            text = f"INSERT INTO tool_calls ({', '.join(columns)}) VALUES ({marks})"  # noqa: S608 - checked column names
        else:
            sets = ", ".join(f"{column}=?" for column in columns)
            text = f"UPDATE tool_calls SET {sets} WHERE id=?"  # noqa: S608 - checked column names
        self._statements[key] = text
        return text

    async def close(self) -> None:
        await anyio.to_thread.run_sync(self._checkpoints.close)
        for conn in (self._conn, self._inline):
            if conn is not None:
                conn.close()
        self._conn = self._inline = None


def _insert_messages(conn: sqlite3.Connection, rows: list[MessageRow]) -> None:
    """``rows`` in order: ``ROWS_PER_INSERT`` rows a statement, then the rest one by one."""
    many = len(rows) - len(rows) % ROWS_PER_INSERT
    if many:
        flat = chain.from_iterable
        conn.executemany(
            _INSERT_MESSAGE_ROWS,
            [
                tuple(flat(map(astuple, rows[at : at + ROWS_PER_INSERT])))
                for at in range(0, many, ROWS_PER_INSERT)
            ],
        )
    if many < len(rows):
        conn.executemany(_INSERT_MESSAGES, map(astuple, rows[many:]))


def hot_writer_for(url: str) -> HotWriter | None:
    """The hot path for a database URL: PostgreSQL (asyncpg) and a file SQLite database
    get one; anything else (an in-memory database) stays on SQLAlchemy."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql" and parsed.get_driver_name() == "asyncpg":
        return PgHotWriter(url)
    if parsed.get_backend_name() != "sqlite":
        return None
    path = parsed.database
    if not path or path == ":memory:" or path.startswith("file:"):
        return None
    return SqliteHotWriter(path)
