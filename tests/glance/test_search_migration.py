"""Migration 0011 on a real database (SQLite, or PostgreSQL in the second pass): it
indexes what was stored before it (final texts and titles, not chunks or dropped
messages), goes down cleanly to 0008 (data kept, index objects gone) and up again."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import inspect, text

from store import Database, downgrade, open_database, upgrade
from store import search as search_store
from store.search import SearchFilter, search_sessions, terms

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 1, 1, tzinfo=UTC)
REPO = "00000000-0000-4000-8000-000000000001"
S1 = "00000000-0000-4000-8000-0000000000a1"
S2 = "00000000-0000-4000-8000-0000000000a2"


@pytest.fixture
async def database(database_url: str) -> AsyncIterator[Database]:
    db = open_database(database_url)
    try:
        yield db
    finally:
        await db.close()


async def _seed(db: Database) -> None:
    from store import Message, Repo, SessionRecord

    async with db.write() as session, session.begin():
        session.add(Repo(id=REPO, name="r", path="/w/r", is_git_repo=False, created_at=T0))
        for sid, title in ((S1, "Capybara plans"), (S2, None)):
            session.add(
                SessionRecord(
                    id=sid,
                    repo_id=REPO,
                    agent_id="default",
                    status="completed",
                    title=title,
                    created_at=T0,
                    updated_at=T0,
                    last_activity_at=T0,
                    last_seq=4,
                    meta={},
                )
            )
        await session.flush()
        rows = [
            (S2, 1, "user", False, False, "ocelot prompt"),
            (S2, 2, "agent", True, False, "platypus chunk"),
            (S2, 3, "agent", False, False, "ocelot reply platypus chunk"),
            (S2, 4, "user", False, True, "axolotl dropped"),
        ]
        for sid, seq, role, partial, dropped, body in rows:
            session.add(
                Message(
                    id=f"00000000-0000-4000-8000-00000000{seq:04d}",
                    session_id=sid,
                    seq=seq,
                    role=role,
                    type="text",
                    partial=partial,
                    dropped=dropped,
                    content={"type": "text", "text": body, "partial": partial},
                    created_at=T0,
                )
            )


async def _found(db: Database, words: str) -> list[tuple[str, int | None]]:
    async with db.read() as session:
        hits = await search_sessions(
            session, terms(words), SearchFilter(archived=None), limit=10, offset=0
        )
    return [(h.session_id, h.seq) for h in hits]


async def _names(db: Database) -> set[str]:
    def names(sync: Any) -> set[str]:
        found = set(inspect(sync).get_table_names())
        for table in ("messages", "sessions"):
            found |= {i["name"] for i in inspect(sync).get_indexes(table) if i["name"]}
            found |= {c["name"] for c in inspect(sync).get_columns(table)}
        return found

    async with db.reader_engine.connect() as conn:
        return await conn.run_sync(names)


async def test_0010_indexes_old_rows_and_goes_down_and_up(database: Database) -> None:
    await upgrade(database)
    await _seed(database)  # through the models (at head), then down: rows from before 0011
    await downgrade(database, "0010_users")
    gone = await _names(database)
    assert not {n for n in gone if search_store.is_index_object(n)}
    assert not {"title_source", "archived", "ix_sessions_activity"} & gone
    async with database.read() as session:
        count = (await session.execute(text("SELECT count(*) FROM messages"))).scalar_one()
    assert count == 4  # the data stays

    await upgrade(database)  # the backfill: what was stored before 0011
    assert await _found(database, "ocelot") in ([(S2, 1)], [(S2, 3)])  # its best message
    assert await _found(database, "platypus") == [(S2, 3)]  # the final text, not the chunk
    assert await _found(database, "axolotl") == []  # dropped
    assert await _found(database, "capybara") == [(S1, None)]  # a title
