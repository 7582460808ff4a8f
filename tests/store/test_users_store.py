"""Migration 0010 (users, tokens, sign-ins; a session's owner and visibility; a run's
user) down and up again with data in place, and the users' store functions, on a real
SQLite file and, in the PostgreSQL pass, on PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import inspect, text

from store import Database, downgrade, open_database, upgrade, utcnow
from store import users as user_store
from store.models import ApiToken, SessionRecord, User
from tests.store.test_store import T0, session_record

pytestmark = pytest.mark.anyio

BEFORE = "0009_session_merged"


async def columns(db: Database, table: str) -> set[str]:
    async with db.reader_engine.connect() as conn:
        found = await conn.run_sync(lambda sync: inspect(sync).get_columns(table))
    return {c["name"] for c in found}


async def test_0010_down_and_up_keeps_sessions_and_the_statistics(store: Database) -> None:
    async with store.write() as db, db.begin():
        await user_store.add_user(db, User(id="u1", name="ann", role="member", created_at=T0))
        await db.execute(
            text("UPDATE sessions SET owner_id = 'u1', owner_name = 'ann' WHERE id = 's1'")
        )
    assert {"owner_id", "owner_name", "visibility"} <= await columns(store, "sessions")
    await downgrade(store, BEFORE)
    assert not {"owner_id", "owner_name", "visibility"} & await columns(store, "sessions")
    assert "user_id" not in await columns(store, "runs")
    async with store.reader_engine.connect() as conn:
        names = await conn.run_sync(lambda sync: inspect(sync).get_table_names())
        count = (await conn.execute(text("SELECT count(*) FROM sessions"))).scalar_one()
    assert not {"users", "api_tokens", "logins"} & set(names)
    assert count == 1
    # The statistics triggers on runs survived (no table copy): a run still rolls up.
    async with store.write() as db, db.begin():
        await db.execute(
            text(
                "INSERT INTO runs (id, session_id, repo_id, agent_id, status, step_count, "
                "max_steps, created_at) VALUES ('r9', 's1', 'r1', 'default', 'completed', 0, "
                "5, :at)"
            ),
            {"at": T0.replace(tzinfo=None) if store.dialect == "sqlite" else T0},
        )
        rolled = (await db.execute(text("SELECT count(*) FROM stats_runs"))).scalar_one()
    assert rolled > 0
    await upgrade(store)
    async with store.read() as db:
        record = await db.get(SessionRecord, "s1")
    assert record is not None and record.visibility == "team" and record.owner_id is None


async def test_tokens_by_hash_expiry_and_cascades(store: Database) -> None:
    now = utcnow()
    async with store.write() as db, db.begin():
        await user_store.add_user(db, User(id="u1", name="ann", role="viewer", created_at=now))
        await user_store.add_token(
            db,
            ApiToken(
                id="t1",
                user_id="u1",
                name=None,
                secret_hash="a" * 64,
                created_at=now,
                expires_at=now + timedelta(days=1),
            ),
        )
        db.add(session_record("s2"))
        await db.flush()
        await db.execute(
            text("UPDATE sessions SET owner_id = 'u1', status = 'active' WHERE id = 's2'")
        )
    async with store.read() as db:
        found = await user_store.token_by_hash(db, "a" * 64)
        assert found is not None and found[1].name == "ann"
        assert await user_store.token_by_hash(db, "b" * 64) is None
        assert await user_store.count_active_sessions_of(db, "u1") == 1
        assert await user_store.any_user(db)
    async with store.write() as db, db.begin():
        await user_store.delete_user(db, "u1")
    async with store.read() as db:
        assert await user_store.token_by_hash(db, "a" * 64) is None
        assert not await user_store.any_user(db)
        assert await db.get(SessionRecord, "s2") is not None  # their sessions stay


async def test_a_fresh_database_upgrades_to_head(database_url: str) -> None:
    db = open_database(database_url)
    try:
        await upgrade(db)
        assert "secret_hash" in await columns(db, "api_tokens")
    finally:
        await db.close()
