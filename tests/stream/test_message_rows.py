"""One row type for a stored message: the rows the writer stores are the rows
``store.replay`` reads back, field by field, on SQLite and on PostgreSQL (whose
``timestamptz`` the replay query formats as the text the writer stamps)."""

from __future__ import annotations

import anyio
import orjson
import pytest
from msgspec.structs import asdict

from server.stream.broker import Broker
from server.stream.frames import stored_frame
from server.stream.writer import Draft, Writer
from store import Database, Message
from store import replay as replay_store
from store.message_row import MESSAGE_COLUMNS, MessageRow
from store.messages import MessageFilter

pytestmark = pytest.mark.anyio


def test_a_row_has_every_column_of_the_messages_table() -> None:
    assert set(MESSAGE_COLUMNS) == set(Message.__table__.columns.keys())


def as_stored(row: MessageRow) -> dict[str, object]:
    """``row`` with its JSON decoded (PostgreSQL's ``jsonb`` has its own text)."""
    values = asdict(row)
    values["content"] = orjson.loads(row.content)
    values["raw"] = None if row.raw is None else orjson.loads(row.raw)
    return values


async def stored_rows(store: Database, hot: bool) -> list[MessageRow]:
    writer = Writer(store, Broker())
    if not hot:
        writer._hot = None  # the SQLAlchemy path
    writer.open_session("s1", 0)
    receipt = writer.submit(
        "s1",
        [
            Draft("agent", {"type": "text", "text": 'é "q" ✓', "partial": True}, {"id": 1}),
            Draft("agent", {"type": "text", "text": "done", "partial": False}, None, "r1", 2),
            Draft("system", {"type": "status", "status": "idle"}),
        ],
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(writer.run)
        await receipt.wait()
        await writer.drain()
    return receipt.rows


@pytest.mark.parametrize("hot", [True, False], ids=["hot path", "sqlalchemy"])
async def test_the_rows_read_back_are_the_rows_the_writer_stored(
    store: Database, hot: bool
) -> None:
    written = await stored_rows(store, hot)
    assert [row.partial for row in written] == [True, False, False]
    async with store.read() as db:
        frames = await replay_store.frame_rows(db, "s1", 0, limit=10)
        views = await replay_store.view_rows(db, "s1", MessageFilter(), limit=None, raw=True)
        plain = await replay_store.view_rows(db, "s1", MessageFilter(), limit=None)
    assert [as_stored(row) for row in views] == [as_stored(row) for row in written]
    without_raw = [as_stored(row) | {"raw": None} for row in written]
    assert [as_stored(row) for row in frames] == without_raw
    assert [as_stored(row) for row in plain] == without_raw
    for live, replayed in zip(written, frames, strict=True):
        assert orjson.loads(stored_frame(replayed)) == orjson.loads(stored_frame(live))
        if store.dialect == "sqlite":  # the writer's JSON text kept: the same bytes
            assert stored_frame(replayed) == stored_frame(live)
