"""Migrations 0006 and 0008: the upgrade fills the roll-up from the runs and tool calls already
there (the fast path then answers as the exact one), its downgrade leaves no table,
trigger or function behind (runs are written as before), and it upgrades again. Migration
0014 (SQLite): the triggers that hand their changes to views keep the same rows as
rebuilding the roll-up from scratch, in a tenth of the schema's SQL; and back."""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy import delete, inspect, text, update

from store import Database, Repo, Run, SessionRecord, downgrade, open_database, rollup, upgrade
from store import stats as exact
from tests.stats.test_rollup import BASE, ZONES, compare, mutate, write_history

pytestmark = pytest.mark.anyio

BEFORE = "0005_agent_controls"


@pytest.fixture
async def database(database_url: str) -> AsyncIterator[Database]:
    db = open_database(database_url)
    try:
        yield db
    finally:
        await db.close()


async def leftovers(db: Database) -> list[str]:
    """Roll-up tables, triggers and trigger functions in the database."""
    async with db.reader_engine.connect() as conn:
        tables = await conn.run_sync(lambda sync: inspect(sync).get_table_names())
        if db.dialect == "sqlite":
            query = "SELECT name FROM sqlite_master WHERE type = 'trigger'"
        else:
            query = (
                "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal UNION ALL "
                "SELECT proname FROM pg_proc WHERE proname LIKE 'stats%'"
            )
        others = (await conn.execute(text(query))).scalars().all()
    return sorted([t for t in tables if t.startswith("stats")] + list(others))


async def everything_agrees(db: Database, repos: list[str]) -> None:
    whole = {"start": BASE - timedelta(hours=7), "end": BASE + timedelta(days=5, minutes=3)}
    for tz in ZONES[:3]:
        for group_by in ("day", "agent", "repo", "status"):
            await compare(db, exact.StatsQuery(**whole, tz=tz), group_by)  # type: ignore[arg-type]
    await compare(db, exact.StatsQuery(**whole, tz="Asia/Kolkata", repo_id=repos[0]), "day")


async def seed_history(database: Database, seed: int) -> tuple[random.Random, list[str], list[str]]:
    """Two rounds of random history over two repositories, then random changes to it:
    the generator (to write more of the same), the repositories and the sessions."""
    async with database.write() as s, s.begin():
        s.add(Repo(id="r1", name="demo", path="/w/demo", is_git_repo=True, created_at=BASE))
    rnd = random.Random(seed)  # noqa: S311 (reproducible test data)
    repos = [str(uuid.uuid4()) for _ in range(2)]
    sessions = await write_history(database, rnd, repos)
    sessions += await write_history(database, rnd, repos)
    await mutate(database, rnd, sessions)
    return rnd, repos, sessions


async def test_upgrade_backfills_and_downgrade_removes(database: Database) -> None:
    await upgrade(database, BEFORE)
    rnd, repos, sessions = await seed_history(database, 15)
    assert await leftovers(database) == []

    await upgrade(database)
    assert "stats_runs" in await leftovers(database)
    await everything_agrees(database, repos)

    await downgrade(database, BEFORE)
    assert await leftovers(database) == []
    async with database.write() as s, s.begin():  # no trigger is left to fail on a write
        await s.execute(update(Run).values(status="completed"))
        await s.execute(delete(SessionRecord).where(SessionRecord.id == sessions[0]))
    await write_history(database, rnd, repos)

    await upgrade(database)
    await everything_agrees(database, repos)


async def quarter_rows_filtered(db: Database) -> int:
    async with db.read() as s:
        query = "SELECT count(*) FROM stats_runs WHERE grain = 900 AND (fa <> '' OR fr <> '')"
        return int((await s.execute(text(query))).scalar_one())


async def half_hour_zones_agree(db: Database, repos: list[str]) -> None:
    whole = {"start": BASE - timedelta(hours=7), "end": BASE + timedelta(days=5, minutes=3)}
    for tz in ("Asia/Kolkata", "Asia/Kathmandu", "Australia/Lord_Howe"):
        for filters in ({"agent_id": "alpha"}, {"repo_id": repos[1]}, {"agent_id": "beta"}):
            await compare(db, exact.StatsQuery(**whole, tz=tz, **filters), "day")  # type: ignore[arg-type]
        both = {"agent_id": "gamma", "repo_id": repos[0]}
        await compare(db, exact.StatsQuery(**whole, tz=tz, **both), "day")  # type: ignore[arg-type]


async def test_0008_fills_filtered_quarter_hours_and_downgrades(database: Database) -> None:
    """0008 adds the 15 min slots filtered by agent and/or repository for the runs already
    there, its triggers keep them; its downgrade removes them (0006's triggers write as
    before) and upgrading again fills them from what was written meanwhile."""
    await upgrade(database, "0007_session_indexes")
    rnd, repos, sessions = await seed_history(database, 8)
    assert await quarter_rows_filtered(database) == 0

    await upgrade(database)
    assert await quarter_rows_filtered(database) > 0
    await half_hour_zones_agree(database, repos)
    await mutate(database, rnd, await write_history(database, rnd, repos))
    await half_hour_zones_agree(database, repos)

    await downgrade(database, "0007_session_indexes")
    assert await quarter_rows_filtered(database) == 0
    assert "stats_runs" in await leftovers(database)
    more = await write_history(database, rnd, repos)
    await mutate(database, rnd, more)
    assert await quarter_rows_filtered(database) == 0  # 0006's triggers: no such rows

    await upgrade(database)
    await half_hour_zones_agree(database, repos)
    await everything_agrees(database, repos)


async def trigger_sql_length(db: Database) -> tuple[int, list[str]]:
    """The length of the schema's trigger SQL and its views' names (SQLite)."""
    async with db.read() as s:
        query = "SELECT type, name, sql FROM sqlite_master WHERE type IN ('trigger', 'view')"
        found = (await s.execute(text(query))).all()
    return sum(len(sql) for kind, _, sql in found if kind == "trigger"), sorted(
        name for kind, name, _ in found if kind == "view"
    )


async def kept_is_rebuilt(db: Database) -> None:
    """The rows the triggers kept are those a backfill from scratch makes (rows summing to
    nothing aside: the triggers leave them, a backfill makes none; cost sums to 1e-9)."""

    async def rows() -> dict[tuple[object, ...], tuple[float, ...]]:
        found = {}
        async with db.read() as s:
            for table, key in (("stats_runs", rollup.RUN_KEY), ("stats_tools", rollup.TOOL_KEY)):
                result = await s.execute(text(f"SELECT * FROM {table}"))  # noqa: S608
                for row in result.all():
                    values = tuple(round(v, 9) for v in row[len(key) :])
                    if any(values):
                        found[(table, *row[: len(key)])] = values
        return found

    kept = await rows()
    async with db.write() as s, s.begin():
        await s.execute(text("DELETE FROM stats_runs"))
        await s.execute(text("DELETE FROM stats_tools"))
        for statement in rollup.backfill_sql("sqlite"):
            await s.execute(text(statement))
    assert await rows() == kept
    assert kept


async def test_0014_hands_changes_to_views_and_keeps_the_same_rows(
    database: Database, database_url: str
) -> None:
    if not database_url.startswith("sqlite"):
        pytest.skip("0014 changes SQLite's triggers only")
    await upgrade(database)
    rnd, repos, sessions = await seed_history(database, 21)
    length, views = await trigger_sql_length(database)
    assert views == sorted(rollup.CHANGE_VIEWS)
    assert length < 60_000  # 0013's triggers: ~160 KB, parsed on every connection
    await kept_is_rebuilt(database)

    await downgrade(database, "0013_search_upkeep")
    length, views = await trigger_sql_length(database)
    assert views == [] and length > 150_000
    await mutate(database, rnd, await write_history(database, rnd, repos))
    await kept_is_rebuilt(database)

    await upgrade(database)
    await mutate(database, rnd, await write_history(database, rnd, repos))
    await kept_is_rebuilt(database)
    await everything_agrees(database, repos)
