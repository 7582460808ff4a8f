"""The PostgreSQL phase (only with ``BENCH_PG_URL``, a server URL as ``scripts/pg start``
prints): text ingest through the real server on a fresh PostgreSQL database, against raw
asyncpg inserting the same rows (``copy_records_to_table``, ``BATCH`` rows per
transaction, JSON encoding and timestamps inside the timed loop) into the server's own
schema on another fresh database of the same server.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from benchlib.limits import BATCH, _rows
from benchlib.procs import Server
from benchlib.stats import median
from store.message_row import MESSAGE_COLUMNS

__all__ = ["phase_pg"]


def _plain(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


async def _fresh_database(server_url: str) -> str:
    import asyncpg

    name = f"bench_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(_plain(server_url))
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return server_url.rsplit("/", 1)[0] + f"/{name}"


async def _drop_database(server_url: str, database_url: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(_plain(server_url))
    try:
        name = database_url.rsplit("/", 1)[1]
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


async def _raw_rows_per_second(url: str, count: int) -> dict[str, Any]:
    import asyncpg
    import orjson
    from sqlalchemy.ext.asyncio import create_async_engine

    from server.stream.writer import new_id
    from store.models import postgresql_options, schema_metadata

    postgresql_options()  # the partial index, as the migrations make it
    engine = create_async_engine(url)
    async with engine.begin() as conn:
        await conn.run_sync(schema_metadata().create_all)
    await engine.dispose()
    session_id, run_id = str(uuid.uuid4()), str(uuid.uuid4())
    rows = _rows("text", count, session_id)
    db = await asyncpg.connect(_plain(url))
    try:
        now = datetime.now(UTC)
        await db.execute(
            "INSERT INTO repos (id, name, path, is_git_repo, created_at)"
            " VALUES ('r', 'r', '/r', false, $1)",
            now,
        )
        await db.execute(
            "INSERT INTO sessions (id, repo_id, agent_id, status, created_at, updated_at,"
            " last_activity_at, last_seq, needs_context, metadata, isolation)"
            " VALUES ($1, 'r', 'default', 'active', $2, $2, $2, 0, false, '{}', 'none')",
            session_id,
            now,
        )
        dumps = orjson.dumps
        started = time.perf_counter()
        for start in range(0, count, BATCH):
            stamp = datetime.now(UTC)
            records = [
                (
                    new_id(),
                    session_id,
                    start + n + 1,
                    run_id,
                    0,
                    "agent",
                    kind,
                    True,
                    False,
                    dumps(content).decode(),
                    dumps(raw).decode(),
                    stamp,
                )
                for n, (content, raw, kind) in enumerate(rows[start : start + BATCH])
            ]
            async with db.transaction():
                await db.copy_records_to_table("messages", columns=MESSAGE_COLUMNS, records=records)
        seconds = time.perf_counter() - started
        stored = await db.fetchval("SELECT count(*) FROM messages")
    finally:
        await db.close()
    if stored != count:
        raise RuntimeError(f"asyncpg limit stored {stored} of {count} rows")
    return {"rows": count, "batch": BATCH, "seconds": seconds, "rows_per_s": count / seconds}


def phase_pg(ctx: Any, server_url: str, flood: Any) -> dict[str, Any]:
    """Raw asyncpg, then the server's text ingest (``flood``: suite._flood)."""
    sizes = ctx.sizes
    limit_url = asyncio.run(_fresh_database(server_url))
    server_db = asyncio.run(_fresh_database(server_url))
    try:
        limit = asyncio.run(_raw_rows_per_second(limit_url, sizes.sqlite_text_rows))
        server = Server.start(
            ctx.tracker, ctx.workdir / "pg", env={"DATABASE_URL": server_db}, log_name="pg.log"
        )
        try:
            repo_id = server.api("POST", "/api/repos", {"path": "bench"}, expect=201)["id"]
            runs = []
            for n in range(sizes.ingest_runs):
                ctx.log(f"  PostgreSQL ingest text run {n + 1}/{sizes.ingest_runs}")
                prompt = f"flood {sizes.ingest_text} text"
                runs.append(flood(ctx, server, repo_id, prompt, sizes.ingest_text))
        finally:
            ctx.tracker.stop(server.process, timeout=60)
    finally:
        for url in (limit_url, server_db):
            asyncio.run(_drop_database(server_url, url))
    return {
        "limit": limit,
        "runs": runs,
        "updates_per_s": median([r["updates_per_s"] for r in runs if r["updates_per_s"]]),
        "cpu_us_per_update": median([r["cpu_us_per_update"] for r in runs]),
    }
