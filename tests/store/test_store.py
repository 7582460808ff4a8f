"""Repository functions on a real SQLite file (and on PostgreSQL in the second pass): they
never commit, the caller owns the transaction."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from store import Database, Message, Repo, SessionRecord, open_database, upgrade, utcnow
from store import messages as message_store
from store import permissions as permission_store
from store import repos as repo_store
from store import sessions as session_store

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)


@pytest.fixture
async def database(database_url: str) -> AsyncIterator[Database]:
    db = open_database(database_url)
    await upgrade(db)
    try:
        yield db
    finally:
        await db.close()


def session_record(
    ident: str, repo_id: str = "r1", status: str = "active", at: datetime = T0
) -> SessionRecord:
    return SessionRecord(
        id=ident,
        repo_id=repo_id,
        agent_id="default",
        status=status,
        title=None,
        created_at=at,
        updated_at=at,
        last_activity_at=at,
        last_seq=0,
        meta={},
    )


def message_row(session_id: str, seq: int, **fields: object) -> dict[str, object]:
    content = fields.pop("content", {"type": "text", "text": f"m{seq}", "partial": False})
    assert isinstance(content, dict)
    row: dict[str, object] = {
        "id": f"{session_id}-{seq}",
        "session_id": session_id,
        "seq": seq,
        "run_id": None,
        "step_number": None,
        "role": "agent",
        "type": content["type"],
        "partial": bool(content.get("partial")),
        "dropped": False,
        "content": content,
        "raw": None,
        "created_at": T0 + timedelta(seconds=seq),
    }
    row.update(fields)
    return row


@pytest.fixture
async def repo(database: Database) -> str:
    async with database.write() as db, db.begin():
        await repo_store.add_repo(
            db, Repo(id="r1", name="demo", path="/w/demo", is_git_repo=True, created_at=T0)
        )
    return "r1"


async def test_nothing_is_committed_by_a_repository_function(database: Database, repo: str) -> None:
    async with database.write() as db:
        await db.begin()
        await repo_store.add_repo(
            db, Repo(id="r2", name="x", path="/w/x", is_git_repo=False, created_at=T0)
        )
        await db.rollback()
    async with database.read() as db:
        assert await repo_store.get_repo(db, "r2") is None
        assert [r.id for r in await repo_store.list_repos(db)] == [repo]


async def test_repos(database: Database, repo: str) -> None:
    async with database.write() as db, db.begin():
        db.add(session_record("s1"))
        db.add(session_record("s2", status="completed"))
    async with database.read() as db:
        found = await repo_store.get_repo_by_path(db, "/w/demo")
        assert found is not None and found.id == repo
        assert await repo_store.get_repo_by_path(db, "/w/demo/") is None
        assert await repo_store.count_active_sessions_of_repo(db, repo) == 1


async def test_datetimes_come_back_aware_utc(database: Database, repo: str) -> None:
    plus_two = T0.astimezone(timezone(timedelta(hours=2)))
    async with database.write() as db, db.begin():
        db.add(session_record("s1", at=plus_two))
    async with database.read() as db:
        record = await session_store.get_session(db, "s1")
    assert record is not None
    assert record.created_at == T0 and record.created_at.tzinfo == UTC
    with pytest.raises(Exception, match="naive"):
        async with database.write() as db, db.begin():
            db.add(session_record("s2", at=datetime(2026, 1, 1)))  # noqa: DTZ001 - on purpose


async def test_admission_never_exceeds_the_limit(database: Database, repo: str) -> None:
    results = []
    for index in range(4):
        async with database.write() as db, db.begin():
            results.append(
                await session_store.insert_session_within_limit(db, session_record(f"s{index}"), 2)
            )
    assert results == [1, 2, None, None]
    async with database.write() as db, db.begin():
        await session_store.update_session(db, "s0", status="completed")
    async with database.write() as db, db.begin():
        assert await session_store.insert_session_within_limit(db, session_record("s9"), 2) == 2
    async with database.read() as db:
        assert await session_store.count_active_sessions(db) == 2
        assert await session_store.get_session(db, "s2") is None


async def test_list_sessions_newest_first_with_filters_and_cursor(
    database: Database, repo: str
) -> None:
    async with database.write() as db, db.begin():
        for index in range(5):
            db.add(
                session_record(
                    f"s{index}",
                    status="active" if index % 2 else "completed",
                    at=T0 + timedelta(seconds=index),
                )
            )
        db.add(session_record("s5", at=T0 + timedelta(seconds=4)))  # same instant as s4
    everything = session_store.SessionFilter()
    async with database.read() as db:
        rows, _ = await session_store.list_sessions(db, everything, limit=10)
        assert [r.id for r in rows] == ["s5", "s4", "s3", "s2", "s1", "s0"]
        rows, total = await session_store.list_sessions(
            db, session_store.SessionFilter(statuses=("active",)), limit=10
        )
        assert ([r.id for r in rows], total) == (["s5", "s3", "s1"], 3)
        rows, _ = await session_store.list_sessions(
            db, everything, limit=2, before=(T0 + timedelta(seconds=4), "s5")
        )
        assert [r.id for r in rows] == ["s4", "s3"]
        rows, _ = await session_store.list_sessions(db, everything, limit=2, offset=4)
        assert [r.id for r in rows] == ["s1", "s0"]
        rows, total = await session_store.list_sessions(
            db, session_store.SessionFilter(repo_id="r1"), limit=1
        )
        assert total == 6


async def test_list_sessions_total_without_a_filter(database: Database, repo: str) -> None:
    async with database.write() as db, db.begin():
        for index in range(3):
            db.add(session_record(f"s{index}"))
    async with database.read() as db:
        _, total = await session_store.list_sessions(db, session_store.SessionFilter(), limit=1)
    assert total == 3


async def test_messages(database: Database, repo: str) -> None:
    async with database.write() as db, db.begin():
        db.add(session_record("s1"))
        db.add(session_record("s2"))
        await db.flush()
        await message_store.insert_messages(
            db,
            [
                message_row("s1", 1, role="user"),
                message_row("s1", 2, content={"type": "text", "text": "a", "partial": True}),
                message_row("s1", 3, content={"type": "text", "text": "b", "partial": True}),
                message_row("s1", 4, content={"type": "text", "text": "ab", "partial": False}),
                message_row(
                    "s1",
                    5,
                    role="system",
                    content={"type": "run", "status": "completed"},
                    run_id="run1",
                ),
                message_row("s2", 1),
            ],
        )
    async with database.read() as db:

        def seqs(rows: object) -> list[int]:
            return [m.seq for m in rows]  # type: ignore[attr-defined]

        assert await message_store.max_seq(db, "s1") == 5
        assert await message_store.max_seq(db, "nope") == 0
        F = message_store.MessageFilter  # noqa: N806
        assert seqs(await message_store.list_messages(db, "s1", F(), limit=None)) == [1, 2, 3, 4, 5]
        assert seqs(await message_store.list_messages(db, "s1", F(after=2), limit=2)) == [3, 4]
        assert seqs(await message_store.list_messages(db, "s1", F(upto=2), limit=None)) == [1, 2]
        assert seqs(await message_store.list_messages(db, "s1", F(partial=False), limit=None)) == [
            1,
            4,
            5,
        ]
        assert seqs(await message_store.list_messages(db, "s1", F(role="user"), limit=None)) == [1]
        assert seqs(await message_store.list_messages(db, "s1", F(type="run"), limit=None)) == [5]
        assert seqs(await message_store.list_messages(db, "s1", F(run_id="run1"), limit=None)) == [
            5
        ]
        since = T0 + timedelta(seconds=3)
        assert seqs(await message_store.list_messages(db, "s1", F(since=since), limit=None)) == [
            4,
            5,
        ]
        stored = await message_store.get_message(db, "s1-4")
        assert isinstance(stored, Message) and stored.content == {
            "type": "text",
            "text": "ab",
            "partial": False,
        }

    async with database.write() as db, db.begin():
        assert await message_store.drop_messages_after(db, "s1", 3) == 2
    async with database.read() as db:
        assert seqs(await message_store.list_messages(db, "s1", F(), limit=None)) == [1, 2, 3]
        with_dropped = await message_store.list_messages(
            db, "s1", F(include_dropped=True), limit=None
        )
        assert [(m.seq, m.dropped) for m in with_dropped][-2:] == [(4, True), (5, True)]
        record = await session_store.get_session(db, "s1")
        assert record is not None and record.needs_context is True
    # A rewind's count and drop, bounded above: 1 < seq <= 2 (seqs 4 and 5 are dropped).
    async with database.read() as db:
        assert await message_store.count_live_between(db, "s1", 1, 5) == 2
    async with database.write() as db, db.begin():
        assert await message_store.drop_between(db, "s1", 1, 2) == 1
    async with database.read() as db:
        assert seqs(await message_store.list_messages(db, "s1", F(), limit=None)) == [1, 3]
        assert await message_store.count_live_between(db, "s1", 0, 5) == 2
        assert seqs(await message_store.list_messages(db, "s2", F(), limit=None)) == [1]


async def test_message_seq_is_unique_per_session(database: Database, repo: str) -> None:
    async with database.write() as db, db.begin():
        db.add(session_record("s1"))
        await db.flush()
        await message_store.insert_messages(db, [message_row("s1", 1)])
    with pytest.raises(IntegrityError, match="(?i)unique"):
        async with database.write() as db, db.begin():
            await message_store.insert_messages(db, [message_row("s1", 1, id="other")])


async def test_permissions_first_decision_wins(database: Database, repo: str) -> None:
    async with database.write() as db, db.begin():
        db.add(session_record("s1"))
        await db.flush()
        await permission_store.insert_permission(
            db, "p1", "s1", None, "call_1", [{"optionId": "allow"}], utcnow()
        )
        await permission_store.insert_permission(db, "p2", "s1", None, "call_2", [], utcnow())
    async with database.read() as db:
        assert {p.id for p in await permission_store.pending_permissions(db, "s1")} == {"p1", "p2"}
    async with database.write() as db, db.begin():
        first = await permission_store.decide_permission(
            db, "p1", {"outcome": "selected", "optionId": "allow"}, utcnow()
        )
        second = await permission_store.decide_permission(
            db, "p1", {"outcome": "cancelled"}, utcnow()
        )
        unknown = await permission_store.decide_permission(
            db, "nope", {"outcome": "cancelled"}, utcnow()
        )
    assert (first, second, unknown) == (True, False, False)
    async with database.read() as db:
        decided = await permission_store.get_permission(db, "p1")
        assert decided is not None and decided.outcome == {
            "outcome": "selected",
            "optionId": "allow",
        }
        assert decided.decided_at is not None
        assert [p.id for p in await permission_store.pending_permissions(db)] == ["p2"]


async def test_deleting_a_session_cascades(database: Database, repo: str) -> None:
    async with database.write() as db, db.begin():
        db.add(session_record("s1"))
        await db.flush()
        await message_store.insert_messages(db, [message_row("s1", 1)])
        await permission_store.insert_permission(db, "p1", "s1", None, None, [], utcnow())
    async with database.write() as db, db.begin():
        await db.execute(text("DELETE FROM sessions WHERE id = 's1'"))
    async with database.read() as db:
        assert (await db.execute(text("SELECT count(*) FROM messages"))).scalar_one() == 0
        assert (await db.execute(text("SELECT count(*) FROM permissions"))).scalar_one() == 0
