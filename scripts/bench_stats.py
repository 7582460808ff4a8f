"""scripts/bench-stats: how long /api/stats' queries take on a database of 1 million runs.

Builds the schema with the migrations, fills it with raw inserts (sqlite3 executemany;
asyncpg COPY) with the roll-up's triggers off, then fills the roll-up as migration 0006
does (timed: the migration's cost on such a database) and turns the triggers back on, then
times the queries the routes run (``store.stats_fast``, ``store.tool_stats_fast``) several
times each and prints the median and the best. SQLite always; PostgreSQL with ``--pg URL`` (the
wrapper passes one from scripts/pg when PG=1). Figures go in docs/performance.md, not in tests.

History: ``--runs`` (default 1 000 000) runs over the last 365 days, 4 agents, 5 repos,
statuses 85 % completed / 6 % failed / 4 % cancelled / 3 % paused / 2 % interrupted,
durations log-normal around 20 s, tokens and a USD cost per run, 0-2 tool calls per run
(6 tool names, 5 % errors).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import text

from store import open_database, rollup, stats_fast, tool_stats_fast, upgrade
from store import stats as stats_store

AGENTS = ("claude", "codex", "gemini", "demo")
STATUSES = ("completed",) * 85 + ("failed",) * 6 + ("cancelled",) * 4 + ("paused",) * 3
STATUSES += ("interrupted",) * 2
TOOLS = ("Read file", "Edit file", "Run tests", "Search", "List dir", "Write file")
SESSIONS = 2000


def history(runs: int, now: datetime) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    rnd = random.Random(15)  # noqa: S311 (reproducible test data, not secrets)
    repos = [str(uuid.UUID(int=rnd.getrandbits(128))) for _ in range(5)]
    sessions = [str(uuid.UUID(int=rnd.getrandbits(128))) for _ in range(SESSIONS)]
    start = now - timedelta(days=365)
    span = 365 * 86400
    run_rows: list[tuple[Any, ...]] = []
    tool_rows: list[tuple[Any, ...]] = []
    for n in range(runs):
        run_id = str(uuid.UUID(int=rnd.getrandbits(128)))
        created = start + timedelta(seconds=span * n / runs)
        status = STATUSES[n % len(STATUSES)]
        duration = int(rnd.lognormvariate(10, 1))
        tin, tout = rnd.randint(500, 50_000), rnd.randint(50, 5000)
        session = sessions[n % SESSIONS]
        run_rows.append(
            (
                run_id,
                session,
                repos[n % 5],
                AGENTS[n % 4],
                status,
                duration,
                created,
                tin,
                tout,
                tin // 3,
                round((tin * 3 + tout * 15) / 1e6, 6),
                "USD",
            )
        )
        for step in range(n % 3):
            tool_rows.append(
                (
                    str(uuid.UUID(int=rnd.getrandbits(128))),
                    run_id,
                    session,
                    f"call_{step}",
                    TOOLS[(n + step) % 6],
                    "error" if rnd.random() < 0.05 else "completed",
                    int(rnd.lognormvariate(6, 1.2)),
                    step + 1,
                    created + timedelta(seconds=step + 1),
                )
            )
    return run_rows, tool_rows


def _sqlite_time(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def fill_sqlite(path: Path, runs: list[tuple[Any, ...]], tools: list[tuple[Any, ...]]) -> None:
    now = _sqlite_time(datetime.now(UTC))
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO repos VALUES ('00000000-0000-4000-8000-000000000001', 'bench', "
            "'/bench', 0, ?)",
            (now,),
        )
        conn.executemany(
            "INSERT INTO sessions (id, repo_id, agent_id, status, created_at, updated_at, "
            "last_activity_at, last_seq, needs_context, metadata) VALUES (?, "
            "'00000000-0000-4000-8000-000000000001', 'demo', 'completed', ?, ?, ?, 0, 0, '{}')",
            sorted({(r[1], now, now, now) for r in runs}),
        )
        conn.executemany(
            "INSERT INTO runs (id, session_id, repo_id, agent_id, status, step_count, max_steps,"
            " duration_ms, created_at, completed_at, input_tokens, output_tokens, cached_tokens,"
            " cost_amount, cost_currency, tool_call_count, tool_failure_count) VALUES "
            "(?, ?, ?, ?, ?, 0, 50, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0)",
            ((*r[:5], r[5], _sqlite_time(r[6]), _sqlite_time(r[6]), *r[7:]) for r in runs),
        )
        conn.executemany(
            "INSERT INTO tool_calls (id, run_id, session_id, tool_call_id, tool_name, status, "
            "duration_ms, step_number, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ((*t[:8], _sqlite_time(t[8])) for t in tools),
        )
        conn.execute(
            "UPDATE runs SET tool_call_count = (SELECT count(*) FROM tool_calls t "
            "WHERE t.run_id = runs.id), tool_failure_count = (SELECT count(*) FROM tool_calls t"
            " WHERE t.run_id = runs.id AND t.status = 'error')"
        )
        conn.execute("ANALYZE")


async def fill_pg(url: str, runs: list[tuple[Any, ...]], tools: list[tuple[Any, ...]]) -> None:
    import asyncpg  # noqa: PLC0415 (only with --pg)

    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    now = datetime.now(UTC)
    try:
        await conn.execute(
            "INSERT INTO repos VALUES ('00000000-0000-4000-8000-000000000001', 'bench', "
            "'/bench', false, $1)",
            now,
        )
        await conn.copy_records_to_table(
            "sessions",
            columns=["id", "repo_id", "agent_id", "status", "created_at", "updated_at"]
            + ["last_activity_at", "last_seq", "needs_context", "metadata"],
            records=[
                (s, "00000000-0000-4000-8000-000000000001", "demo", "completed", now, now, now)
                + (0, False, "{}")
                for s in sorted({r[1] for r in runs})
            ],
        )
        runs_with_counts = _with_counts(runs, tools)
        await conn.copy_records_to_table(
            "runs",
            columns=["id", "session_id", "repo_id", "agent_id", "status", "duration_ms"]
            + ["created_at", "input_tokens", "output_tokens", "cached_tokens", "cost_amount"]
            + ["cost_currency", "step_count", "max_steps", "completed_at"]
            + ["tool_call_count", "tool_failure_count"],
            records=runs_with_counts,
        )
        await conn.copy_records_to_table(
            "tool_calls",
            columns=["id", "run_id", "session_id", "tool_call_id", "tool_name", "status"]
            + ["duration_ms", "step_number", "created_at"],
            records=tools,
        )
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()


def _with_counts(
    runs: list[tuple[Any, ...]], tools: list[tuple[Any, ...]]
) -> list[tuple[Any, ...]]:
    calls: dict[str, list[int]] = {}
    for t in tools:
        tally = calls.setdefault(t[1], [0, 0])
        tally[0] += 1
        tally[1] += t[5] == "error"
    return [(*r, 0, 50, r[6], *calls.get(r[0], [0, 0])) for r in runs]


Query = Callable[[Any], Awaitable[Any]]


def queries(now: datetime, repo: str) -> list[tuple[str, Query]]:
    out: list[tuple[str, Query]] = []
    for days in (1, 30, 365):
        for tz in ("UTC", "Asia/Kolkata"):
            query = stats_store.StatsQuery(start=now - timedelta(days=days), end=now, tz=tz)
            for group_by in ("day", "agent", "repo", "status"):
                out.append(
                    (
                        f"{days} d by {group_by}, {tz}",
                        lambda db, q=query, g=group_by: stats_fast.run_buckets(db, q, g),
                    )
                )
        query = stats_store.StatsQuery(start=now - timedelta(days=days), end=now)
        out.append(
            (f"{days} d tools", lambda db, q=query: tool_stats_fast.tool_stats(db, q, limit=50))
        )
    # a year by day in zones whose midnights are not UTC's: whole hours, half and quarter
    # hours, unfiltered and filtered (one agent, one repository, both)
    for tz in ("UTC", "America/New_York", "Asia/Kolkata", "Asia/Kathmandu"):
        for name, filters in (
            ("", {}),
            (", one agent", {"agent_id": "claude"}),
            (", one repo", {"repo_id": repo}),
            (", agent+repo", {"agent_id": "claude", "repo_id": repo}),
        ):
            if not filters and tz in ("UTC", "Asia/Kolkata"):
                continue  # in the table above
            query = stats_store.StatsQuery(
                start=now - timedelta(days=365), end=now, tz=tz, **filters
            )
            out.append(
                (
                    f"365 d by day, {tz}{name}",
                    lambda db, q=query: stats_fast.run_buckets(db, q, "day"),
                )
            )
    query = stats_store.StatsQuery(start=now - timedelta(days=365), end=now, agent_id="claude")
    out.append(
        ("365 d tools, one agent", lambda db, q=query: tool_stats_fast.tool_stats(db, q, limit=50))
    )
    return out


async def roll_up(url: str, *, off: bool) -> float:
    """Triggers off (before the bulk load), or: fill the roll-up and triggers back on;
    returns the seconds the fill took."""
    db = open_database(url)
    try:
        async with db.writer_engine.begin() as conn:
            if off:
                for statement in rollup.drop_trigger_sql(db.dialect):
                    await conn.execute(text(statement))
                return 0.0
            began = time.perf_counter()
            for statement in rollup.backfill_sql(db.dialect):
                await conn.execute(text(statement))
            took = time.perf_counter() - began
            for statement in rollup.trigger_sql(db.dialect):
                await conn.execute(text(statement))
        async with db.writer_engine.connect() as conn:
            await conn.execute(text("ANALYZE"))
            await conn.commit()
        return took
    finally:
        await db.close()


async def measure(url: str, now: datetime, repeat: int) -> list[tuple[str, float, float]]:
    db = open_database(url)
    out = []
    try:
        async with db.read() as session:
            repo = (await session.execute(text("SELECT repo_id FROM runs LIMIT 1"))).scalar()
        for name, run in queries(now, str(repo)):
            times = []
            for _ in range(repeat + 1):  # the first warms the cache and is not counted
                async with db.read() as session:
                    began = time.perf_counter()
                    await run(session)
                    times.append((time.perf_counter() - began) * 1000)
            out.append((name, statistics.median(times[1:]), min(times[1:])))
    finally:
        await db.close()
    return out


async def prepare(url: str) -> None:
    db = open_database(url)
    try:
        await upgrade(db)
    finally:
        await db.close()


def report(label: str, rows: list[tuple[str, float, float]]) -> None:
    print(f"\n{label}")
    print(f"  {'query':<48} {'median ms':>10} {'best ms':>9}")
    for name, median, best in rows:
        print(f"  {name:<48} {median:>10.1f} {best:>9.1f}")


def bench_sqlite(
    runs: list[tuple[Any, ...]], tools: list[tuple[Any, ...]], now: datetime, repeat: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        url = f"sqlite+aiosqlite:///{path}"
        asyncio.run(prepare(url))
        asyncio.run(roll_up(url, off=True))
        began = time.perf_counter()
        fill_sqlite(path, runs, tools)
        took = time.perf_counter() - began
        print(f"SQLite filled in {took:.1f} s ({path.stat().st_size >> 20} MiB)")
        took = asyncio.run(roll_up(url, off=False))
        print(f"SQLite roll-up filled in {took:.1f} s ({path.stat().st_size >> 20} MiB)")
        report(f"SQLite {sqlite3.sqlite_version}", asyncio.run(measure(url, now, repeat)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--pg", help="an empty PostgreSQL database (SQLAlchemy URL)")
    parser.add_argument("--no-sqlite", action="store_true", help="PostgreSQL only")
    args = parser.parse_args()
    now = datetime.now(UTC)
    began = time.perf_counter()
    runs, tools = history(args.runs, now)
    took = time.perf_counter() - began
    print(f"generated {len(runs)} runs, {len(tools)} tool calls in {took:.1f} s")
    if not args.no_sqlite:
        bench_sqlite(runs, tools, now, args.repeat)
    if args.pg:
        asyncio.run(prepare(args.pg))
        asyncio.run(roll_up(args.pg, off=True))
        began = time.perf_counter()
        asyncio.run(fill_pg(args.pg, runs, tools))
        print(f"\nPostgreSQL filled in {time.perf_counter() - began:.1f} s")
        took = asyncio.run(roll_up(args.pg, off=False))
        print(f"PostgreSQL roll-up filled in {took:.1f} s")
        report("PostgreSQL", asyncio.run(measure(args.pg, now, args.repeat)))


if __name__ == "__main__":
    main()
