"""The writer's hot path (stdlib sqlite3 or asyncpg, pre-encoded rows) stores exactly
what the SQLAlchemy path stores: on SQLite the same column text and types for messages
and the session's activity stamp; on both, the same rows read back through the ORM. A
batch with an op the hot path does not know goes through SQLAlchemy, in the same order."""

from __future__ import annotations

import sqlite3
from typing import Any

import anyio
import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession

from server.stream.broker import Broker
from server.stream.writer import Draft, Writer
from store import Database, SessionRecord
from store import messages as message_store
from store.hot_writes import ROWS_PER_INSERT, SqliteHotWriter
from store.hot_writes_pg import PgHotWriter
from tests.store.test_store import session_record

pytestmark = pytest.mark.anyio


def drafts() -> list[Draft]:
    return [
        Draft("agent", {"type": "text", "text": "é → ünïcode", "partial": True}),
        Draft("agent", {"type": "text", "text": "done", "partial": False}, {"jsonrpc": "2.0"}),
        Draft("system", {"type": "status", "status": "idle"}, None, None, 3),
    ]


def flood() -> list[Draft]:
    """A flood's batch: INSERTs of ROWS_PER_INSERT rows, then a few one by one."""
    return [
        Draft("agent", {"type": "text", "text": f"chunk {n} ✓", "partial": True}, {"n": n}, "r1", n)
        for n in range(2 * ROWS_PER_INSERT + 3)
    ]


async def write(
    writer: Writer, session_id: str, batch: list[Draft] | None = None
) -> list[dict[str, Any]]:
    writer.open_session(session_id, 0)
    receipt = writer.submit(session_id, drafts() if batch is None else batch)
    async with anyio.create_task_group() as tg:
        tg.start_soon(writer.run)
        rows = await receipt.wait()
        await writer.drain()
    return rows


def stored(path: str, session_id: str) -> tuple[list[tuple[Any, ...]], tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        messages = conn.execute(
            "SELECT seq, run_id, step_number, role, type, partial, dropped, content, raw,"
            " typeof(created_at), length(created_at), typeof(partial)"
            " FROM messages WHERE session_id = ? ORDER BY seq",
            (session_id,),
        ).fetchall()
        session = conn.execute(
            "SELECT last_seq, typeof(updated_at), length(updated_at),"
            " updated_at = last_activity_at FROM sessions WHERE id = ?",
            (session_id,),
        ).fetchone()
    return messages, session


async def test_the_hot_path_stores_what_sqlalchemy_stores(store: Database) -> None:
    async with store.write() as db, db.begin():
        db.add(session_record("s2"))
    hot = Writer(store, Broker())
    assert isinstance(hot._hot, SqliteHotWriter if store.dialect == "sqlite" else PgHotWriter)
    cold = Writer(store, Broker())
    cold._hot = None  # the SQLAlchemy path, for comparison
    hot_rows = await write(hot, "s1")
    cold_rows = await write(cold, "s2")

    if store.dialect == "sqlite":  # the stored text itself
        path = make_url(store.url).database
        assert path is not None
        assert stored(path, "s1") == stored(path, "s2")
    async with store.read() as db:
        for session_id, rows in (("s1", hot_rows), ("s2", cold_rows)):
            messages = await message_store.list_messages(
                db, session_id, message_store.MessageFilter(), limit=None
            )
            assert [(m.id, m.seq, m.created_at, m.content, m.raw, m.partial) for m in messages] == [
                (
                    r["id"],
                    r["seq"],
                    r["created_at"],
                    d.content,
                    d.raw,
                    d.content.get("partial", False),
                )
                for r, d in zip(rows, drafts(), strict=True)
            ]
            record = await db.get(SessionRecord, session_id)
            assert record is not None
            assert record.last_seq == 3
            assert record.last_activity_at == rows[-1]["created_at"]


async def test_a_floods_batch_stores_what_sqlalchemy_stores(store: Database) -> None:
    """Rows that go in ROWS_PER_INSERT to a statement (SQLite) are stored as the
    SQLAlchemy path stores them one by one, in seq order."""
    async with store.write() as db, db.begin():
        db.add(session_record("s2"))
    hot = Writer(store, Broker())
    cold = Writer(store, Broker())
    cold._hot = None
    hot_batch, cold_batch = flood(), flood()
    hot_rows = await write(hot, "s1", hot_batch)
    cold_rows = await write(cold, "s2", cold_batch)
    if store.dialect == "sqlite":
        path = make_url(store.url).database
        assert path is not None
        assert stored(path, "s1") == stored(path, "s2")
    async with store.read() as db:
        for session_id, rows, batch in (("s1", hot_rows, hot_batch), ("s2", cold_rows, cold_batch)):
            messages = await message_store.list_messages(
                db, session_id, message_store.MessageFilter(), limit=None
            )
            assert [(m.id, m.seq, m.content, m.raw, m.run_id) for m in messages] == [
                (r["id"], n + 1, d.content, d.raw, d.run_id)
                for n, (r, d) in enumerate(zip(rows, batch, strict=True))
            ]


async def test_a_batch_with_another_op_goes_through_sqlalchemy_in_order(store: Database) -> None:
    writer = Writer(store, Broker())
    writer.open_session("s1", 0)
    seen: list[int] = []

    async def note(db: AsyncSession) -> None:
        seen.append(
            len(
                await message_store.list_messages(
                    db, "s1", message_store.MessageFilter(), limit=None
                )
            )
        )

    first = writer.submit("s1", drafts()[:1])
    async with anyio.create_task_group() as tg:
        tg.start_soon(writer.run)
        await first.wait()  # committed alone, on the hot path (SQLite)
        second = writer.submit("s1", drafts()[1:], [note])
        await second.wait()
        await writer.drain()
    assert seen == [3]  # the op saw the earlier commit and its own batch's rows


async def test_an_op_for_sqlalchemy_does_not_take_the_flood_ahead_of_it_along(
    store: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Receipts queued together: the hot ones ahead of a receipt whose op the hot path
    does not know are committed on the hot path, that receipt alone through SQLAlchemy,
    and the hot ones behind it on the hot path again, in seq order."""
    writer = Writer(store, Broker())
    assert writer._hot is not None
    hot_rows: list[list[int]] = []
    slow_rows: list[list[int]] = []
    hot_commit, slow_insert = writer._hot.commit, message_store.insert_messages

    async def spy_hot(batch: Any, announce: Any) -> None:
        hot_rows.append([row.seq for row in batch.messages])
        await hot_commit(batch, announce)

    async def spy_slow(db: AsyncSession, rows: list[dict[str, Any]]) -> None:
        slow_rows.append([row["seq"] for row in rows])
        await slow_insert(db, rows)

    monkeypatch.setattr(writer._hot, "commit", spy_hot)
    monkeypatch.setattr(message_store, "insert_messages", spy_slow)

    async def noop(db: AsyncSession) -> None:
        pass

    writer.open_session("s1", 0)
    receipts = [writer.submit("s1", flood()[:1]) for _ in range(3)]  # seqs 1-3
    receipts.append(writer.submit("s1", flood()[:2], [noop]))  # 4-5, needs SQLAlchemy
    receipts += [writer.submit("s1", flood()[:1]) for _ in range(2)]  # 6-7
    async with anyio.create_task_group() as tg:
        tg.start_soon(writer.run)
        for receipt in receipts:
            await receipt.wait()
        await writer.drain()
    assert hot_rows == [[1, 2, 3], [6, 7]]
    assert slow_rows == [[4, 5]]
    async with store.read() as db:
        listed = await message_store.list_messages(
            db, "s1", message_store.MessageFilter(), limit=None
        )
    assert [m.seq for m in listed] == [1, 2, 3, 4, 5, 6, 7]
