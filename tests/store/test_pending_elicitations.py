"""The elicitations still waiting for an answer, of one session or of every session (what
start-up recovery cancels, also those an agent asked outside any turn), found through the
partial index ``ix_messages_elicitation`` rather than a scan of every message."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from store import Database
from store import messages as message_store
from tests.store.conftest import query_plans, sqlite_only
from tests.store.test_store import message_row, session_record

pytestmark = pytest.mark.anyio


def asked(session_id: str, seq: int, request: str, **extra: Any) -> dict[str, object]:
    content = {"type": "elicitation", "requestId": request, "mode": "form", "outcome": None}
    return message_row(session_id, seq, role="agent", content={**content, **extra})


async def fill(store: Database) -> None:
    async with store.write() as db, db.begin():
        db.add(session_record("s2"))
        await db.flush()
        await message_store.insert_messages(
            db,
            [
                asked("s1", 1, "q1"),
                message_row("s1", 2),
                asked("s1", 3, "q1", outcome={"action": "accept"}),  # answered
                asked("s1", 4, "q2"),  # pending, no turn
                asked("s2", 1, "q1"),  # the same id in another session: its own request
                message_row("s2", 2),
            ],
        )


async def test_the_pending_ones_of_one_session_or_of_all(store: Database) -> None:
    await fill(store)
    async with store.read() as db:
        everyone = await message_store.pending_elicitations(db, None)
        one = await message_store.pending_elicitations(db, "s1")
    assert sorted((m.session_id, m.content["requestId"]) for m in everyone) == [
        ("s1", "q2"),
        ("s2", "q1"),
    ]
    assert [(m.session_id, m.seq) for m in one] == [("s1", 4)]


@sqlite_only
async def test_every_sessions_pending_ones_are_read_through_the_partial_index(
    store: Database,
) -> None:
    await fill(store)

    async def read(db: AsyncSession) -> None:
        await message_store.pending_elicitations(db, None)

    [(sql, details)] = await query_plans(store, read, "FROM messages")
    assert "ix_messages_elicitation" in details, (sql, details)


def test_the_models_index_is_partial_on_postgresql_once_an_engine_is_opened() -> None:
    """The models leave ``postgresql_where`` out (it loads the PostgreSQL dialect);
    opening a PostgreSQL database puts it in, so ``create_all`` makes the index the
    migrations make. No server needed: the engine connects on first use only."""
    from sqlalchemy.dialects import postgresql
    from sqlalchemy.schema import CreateIndex

    from store import open_database
    from store.models import Message

    (index,) = [i for i in Message.__table__.indexes if i.name == "ix_messages_elicitation"]
    index.dialect_options["postgresql"]["where"] = None  # as the models declare it
    ddl = str(CreateIndex(index).compile(dialect=postgresql.dialect()))
    assert "WHERE" not in ddl, ddl
    open_database("postgresql+asyncpg://nobody@127.0.0.1:1/none")
    ddl = str(CreateIndex(index).compile(dialect=postgresql.dialect()))
    assert ddl.endswith("WHERE type = 'elicitation'"), ddl
