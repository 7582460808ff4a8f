"""The hot write path on PostgreSQL: asyncpg on a connection and a thread of its own.

The same batches as the SQLite path (store/hot_writes.py): message rows through
``copy_records_to_table`` (COPY, binary), the sessions' activity stamps and tool-call rows
through ``executemany``, and the cluster's NOTIFY payloads (``pg_notify``, delivered on
commit) in the same transaction. The connection lives on its own event loop in its own
thread, so the protocol work and the waits on the server never run on the app's loop.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import orjson
from msgspec.structs import astuple
from sqlalchemy.engine import make_url

from store.hot_batch import (
    JSON_TOOL_COLUMNS,
    STEP_COUNT,
    HotBatch,
    ToolCallInsert,
    check_tool_columns,
)
from store.message_row import MESSAGE_COLUMNS

__all__ = ["PgHotWriter"]

_NOTE_ACTIVITY = "UPDATE sessions SET last_seq=$1, updated_at=$2, last_activity_at=$2 WHERE id=$3"
_STEP_COUNT = STEP_COUNT.replace("step_count=?", "step_count=$1").replace("id=?", "id=$2")
_NOTIFY = "SELECT pg_notify($1, $2)"
assert MESSAGE_COLUMNS[-1] == "created_at"  # the column _commit stamps with a datetime


def _pg_value(column: str, value: Any) -> Any:
    if value is None:
        return None
    if column in JSON_TOOL_COLUMNS:
        return orjson.dumps(value).decode()  # jsonb takes its text
    return value


class PgHotWriter:
    """``commit`` is awaited on the app's loop and runs on the writer's own loop."""

    def __init__(self, url: str) -> None:
        parsed = make_url(url)
        self._connect_args: dict[str, Any] = {
            "user": parsed.username,
            "password": parsed.password,
            "host": parsed.host,
            "port": parsed.port,
            "database": parsed.database,
        }
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._conn: Any = None
        self._statements: dict[tuple[str, tuple[str, ...]], str] = {}

    def _writer_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="hot-writer", daemon=True)
            thread.start()
            self._loop, self._thread = loop, thread
        return self._loop

    async def commit(self, batch: HotBatch, announce: tuple[str, list[str]] | None) -> None:
        future = asyncio.run_coroutine_threadsafe(
            self._commit(batch, announce), self._writer_loop()
        )
        await asyncio.wrap_future(future)

    async def _connection(self) -> Any:
        if self._conn is None or self._conn.is_closed():
            import asyncpg  # only with a PostgreSQL URL

            self._conn = await asyncpg.connect(**self._connect_args)
        return self._conn

    async def _commit(self, batch: HotBatch, announce: tuple[str, list[str]] | None) -> None:
        conn = await self._connection()
        when = batch.stamps
        async with conn.transaction():
            if batch.messages:
                await conn.copy_records_to_table(
                    "messages",
                    columns=MESSAGE_COLUMNS,
                    # the row's own column order, its stamp as the datetime timestamptz takes
                    records=[(*astuple(m)[:-1], when[m.created_at]) for m in batch.messages],
                )
            if batch.activity:
                await conn.executemany(
                    _NOTE_ACTIVITY,
                    [(seq, when[at], sid) for sid, (seq, at) in batch.activity.items()],
                )
            for op in batch.tools:
                if isinstance(op, ToolCallInsert):
                    values = op.row
                    await conn.execute(
                        self._statement("insert", tuple(values)),
                        *(_pg_value(c, v) for c, v in values.items()),
                    )
                    await conn.execute(_STEP_COUNT, op.step, op.run_id)
                else:
                    values = op.take()
                    await conn.execute(
                        self._statement("update", tuple(values)),
                        *(_pg_value(c, v) for c, v in values.items()),
                        op.row_id,
                    )
            if announce is not None:
                channel, payloads = announce
                await conn.executemany(_NOTIFY, [(channel, payload) for payload in payloads])

    def _statement(self, kind: str, columns: tuple[str, ...]) -> str:
        key = (kind, columns)
        text = self._statements.get(key)
        if text is not None:
            return text
        check_tool_columns(columns)
        marks = [f"${n}" for n in range(1, len(columns) + 1)]
        if kind == "insert":
            text = f"INSERT INTO tool_calls ({', '.join(columns)}) VALUES ({', '.join(marks)})"  # noqa: S608 - checked column names
        else:
            sets = ", ".join(f"{c}={m}" for c, m in zip(columns, marks, strict=True))
            text = f"UPDATE tool_calls SET {sets} WHERE id=${len(columns) + 1}"  # noqa: S608 - checked column names
        self._statements[key] = text
        return text

    async def close(self) -> None:
        """Close the connection and stop the writer's loop."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._loop = self._thread = None
        try:
            if self._conn is not None:
                conn, self._conn = self._conn, None
                closing = asyncio.run_coroutine_threadsafe(conn.close(timeout=5), loop)
                await asyncio.wrap_future(closing)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            await asyncio.to_thread(thread.join, 10)
            loop.close()
