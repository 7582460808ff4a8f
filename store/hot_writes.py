"""The hot write path: the writer's group commit straight through the driver.

Migrations, reads and every other write go through SQLAlchemy; the rows the writer
commits most (messages, the session's activity stamp, tool-call rows) go here instead:
pre-encoded rows, one ``executemany`` per statement per batch, on a connection of their
own that only the writer's thread uses. The rows stored are exactly what SQLAlchemy
would store (same JSON text, same timestamp text on SQLite, 0/1 booleans), so readers
through the ORM see no difference.

A profile of a 40 000-update flood (py-spy on the server) showed SQLAlchemy's
executemany and the aiosqlite hand-offs as the largest part of the event loop's time
per update after parsing: bind processors per row per column (JSON, the UTC datetime
decorator, the datetime format, booleans), statement compile-cache lookups, and a dozen
thread hops per transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import chain
from typing import Any, Protocol

import anyio
import anyio.to_thread
import orjson
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession

from store import runs as run_store
from store.checkpoints import Checkpointer
from store.engine import SQLITE_BUSY_TIMEOUT_MS, sqlite_pragmas
from store.models import ToolCall

__all__ = [
    "HotBatch",
    "HotWriter",
    "MESSAGE_COLUMNS",
    "MessageRow",
    "ROWS_PER_INSERT",
    "SqliteHotWriter",
    "ToolCallInsert",
    "ToolCallUpdate",
    "hot_writer_for",
    "message_dict",
    "sqlite_stamp",
]

_NOTE_ACTIVITY = "UPDATE sessions SET last_seq=?, updated_at=?, last_activity_at=? WHERE id=?"
_STEP_COUNT = "UPDATE runs SET step_count=? WHERE id=?"
_JSON_COLUMNS = frozenset({"input", "output"})
_BUSY = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
# A batch this small (paced updates: one or a few rows) is committed on the event loop's
# thread when the write lock is free: the hand-off to the writer's thread and back (two
# thread wake-ups, a self-pipe write) cost more than the commit itself. At 1 000
# updates/s (one row a commit) the server's CPU fell from ~395 to ~300 us an update.
INLINE_ROWS = 8
# The writer's thread commits a flood's batches (up to 2 000 rows; ~20 MB for ~5 KB tool
# updates). With SQLite's default page cache (2 MB) such a transaction spills dirty pages
# into the WAL before its COMMIT and writes the B-tree pages it touches again after
# (py-spy, 20 000-tool-update flood: sqlite3PcacheFetchStress 23 % of the writer
# thread's samples). With room for the batch, each page goes to the WAL once, at COMMIT.
# The cache grows to this only while such batches are written (the thread's connection).
WRITER_CACHE_KIB = 32768
_TOOL_COLUMNS = frozenset(column.name for column in ToolCall.__table__.columns)

# (id, session_id, seq, run_id, step_number, role, type, partial, dropped, content, raw,
# created_at): partial and dropped 0/1, content and raw JSON text, created_at the text
# of sqlite_stamp: exactly the values SQLAlchemy binds on SQLite.
MessageRow = tuple[str, str, int, str | None, int | None, str, str, int, int, str, str | None, str]
MESSAGE_COLUMNS = (
    "id",
    "session_id",
    "seq",
    "run_id",
    "step_number",
    "role",
    "type",
    "partial",
    "dropped",
    "content",
    "raw",
    "created_at",
)
"""The messages table's columns in the order of a ``MessageRow``."""
_ROW_KEYS = MESSAGE_COLUMNS[:-1]
_COLUMN_LIST = ", ".join(MESSAGE_COLUMNS)
_ROW_MARKS = "(?,?,?,?,?,?,?,?,?,?,?,?)"
_INSERT_MESSAGES = f"INSERT INTO messages ({_COLUMN_LIST}) VALUES {_ROW_MARKS}"  # noqa: S608 - constant columns
# A flood's batch goes in as INSERTs of this many rows each (the rest one by one). The
# sqlite3 module gives up the GIL around each statement's step and takes it back after:
# an executemany of one-row INSERTs takes the GIL back once a row, and while the event
# loop's thread runs Python each of those waits for it to let go. A 20 000-tool-update
# flood committed 2 000-row batches (the most the writer takes), the writer's thread
# waiting on the GIL; raw sqlite3 inserting those rows next to a thread running Python
# (200 us of it between GIL releases): 12.0-12.9 k rows/s one row a statement, 20.3-20.5 k
# rows/s with 50 (23 k alone, either way). 64 rows: 768 parameters, under SQLite's
# oldest default limit (999).
ROWS_PER_INSERT = 64
_INSERT_MESSAGE_ROWS = (
    f"INSERT INTO messages ({_COLUMN_LIST}) VALUES {','.join([_ROW_MARKS] * ROWS_PER_INSERT)}"  # noqa: S608 - constant columns
)


class ToolCallInsert:
    """The writer's op for a tool call's first row (and its run's step count). Run as an
    op on the SQLAlchemy path; the hot path writes it as a row of its batch."""

    __slots__ = ("row", "run_id", "step")

    def __init__(self, row: run_store.ToolCallValues, run_id: str, step: int) -> None:
        self.row = row
        self.run_id = run_id
        self.step = step

    async def __call__(self, db: AsyncSession) -> None:
        await run_store.insert_tool_call(db, self.row, self.run_id, self.step)


class ToolCallUpdate:
    """The writer's op for a tool call's later state. ``take`` returns the values merged
    since the op was queued (the same values again on a retry)."""

    __slots__ = ("row_id", "take")

    def __init__(self, row_id: str, take: Callable[[], run_store.ToolCallValues]) -> None:
        self.row_id = row_id
        self.take = take

    async def __call__(self, db: AsyncSession) -> None:
        await run_store.update_tool_call(db, self.row_id, self.take())


HOT_OPS = (ToolCallInsert, ToolCallUpdate)


@dataclass(slots=True)
class HotBatch:
    """One transaction's worth: message rows, each session's last (seq, time), tool ops."""

    messages: list[MessageRow] = field(default_factory=list)
    activity: dict[str, tuple[int, str]] = field(default_factory=dict)  # seq, stamp
    stamps: dict[str, datetime] = field(default_factory=dict)  # stamp -> its datetime
    tools: list[ToolCallInsert | ToolCallUpdate] = field(default_factory=list)


def message_dict(row: MessageRow, created_at: datetime) -> dict[str, Any]:
    """``row`` by column name (content and raw still JSON text), stamped ``created_at``."""
    values: dict[str, Any] = dict(zip(_ROW_KEYS, row, strict=False))
    values["partial"] = bool(row[7])
    values["dropped"] = bool(row[8])
    values["created_at"] = created_at
    return values


def sqlite_stamp(value: datetime) -> str:
    """SQLAlchemy's SQLite text for a UTC datetime (its DATETIME storage format,
    ``YYYY-MM-DD HH:MM:SS.ffffff``); ``isoformat`` is C, a third of an f-string's cost."""
    if value.tzinfo is not UTC and value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.isoformat(" ", "microseconds")[:26]


def _sqlite_value(column: str, value: Any) -> Any:
    if value is None:
        return None
    if column in _JSON_COLUMNS:
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
                conn.execute(_STEP_COUNT, (op.step, op.run_id))
                sql, params = None, []
        if sql is not None and params:
            conn.executemany(sql, params)

    def _statement(self, key: tuple[str, tuple[str, ...]]) -> str:
        kind, columns = key
        if not _TOOL_COLUMNS.issuperset(columns):  # names from code, never from input
            raise ValueError(f"not tool_calls columns: {sorted(set(columns) - _TOOL_COLUMNS)}")
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
                tuple(flat(rows[at : at + ROWS_PER_INSERT]))
                for at in range(0, many, ROWS_PER_INSERT)
            ],
        )
    if many < len(rows):
        conn.executemany(_INSERT_MESSAGES, rows[many:])


class HotWriter(Protocol):
    async def commit(self, batch: HotBatch, announce: tuple[str, list[str]] | None) -> None: ...

    async def close(self) -> None: ...


def hot_writer_for(url: str) -> HotWriter | None:
    """The hot path for a database URL: PostgreSQL (asyncpg) and a file SQLite database
    get one; anything else (an in-memory database) stays on SQLAlchemy."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql" and parsed.get_driver_name() == "asyncpg":
        from store.hot_writes_pg import PgHotWriter

        return PgHotWriter(url)
    if parsed.get_backend_name() != "sqlite":
        return None
    path = parsed.database
    if not path or path == ":memory:" or path.startswith("file:"):
        return None
    return SqliteHotWriter(path)
