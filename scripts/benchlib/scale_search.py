"""``scripts/bench-scale --search``: full-text search over a million stored messages and
what keeping its index costs the ingest (API.md, Finding and keeping sessions).

A database (SQLite, and PostgreSQL with ``--pg URL``) at the server's head schema gets
``messages`` final texts (prompts and whole agent replies, every one of them indexed:
the worst case for the index) over ``sessions`` sessions, words drawn from a 10 000-word
vocabulary with Zipf frequencies, so a query can be rare (a few hundred messages),
medium (tens of thousands) or common (most messages). Then the real server on it:

- ``GET /api/sessions?q=...`` p50 over ``samples`` requests for each kind of query;
- ingest A/B: ``flood N text`` (the ingest of ``scripts/bench``) on the same database
  with the index kept (triggers on SQLite, the GIN index on PostgreSQL) and without it,
  servers alternated, the medians of rate and server CPU per update compared.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import sqlite3
import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from benchlib.procs import Server, Tracker
from benchlib.scale_db import migrate
from benchlib.scale_probe import page_latency
from benchlib.stats import median
from benchlib.suite import FULL, Context, _flood

__all__ = ["QUERIES", "run_search"]

VOCABULARY = 10_000
WORDS_PER_MESSAGE = 12
_EPOCH = datetime(2026, 1, 1)
_SQLITE_TRIGGERS = ("messages_fts_insert", "messages_fts_drop", "messages_fts_delete")


def word(rank: int) -> str:
    """A pronounceable word for a vocabulary rank (stable across runs)."""
    consonants, vowels = "bdfgklmnprstvz", "aeiou"
    out = []
    n = rank + 1
    while n:
        n, c = divmod(n, len(consonants))
        n, v = divmod(n, len(vowels))
        out.append(consonants[c] + vowels[v])
    return "".join(out) + "x"


# (name, query): ranks chosen for their share of 1 M messages of 12 words each
QUERIES = {
    "rare_word": word(5_000),
    "medium_word": word(50),
    "common_word": word(0),
    "two_words": f"{word(40)} {word(300)}",
    "prefix": word(2_000)[:-2],
}


def _texts(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)  # noqa: S311 - a reproducible corpus, not a secret
    vocab = [word(i) for i in range(VOCABULARY)]
    weights = list(itertools.accumulate(1.0 / (i + 1) for i in range(VOCABULARY)))
    return [
        " ".join(rng.choices(vocab, cum_weights=weights, k=WORDS_PER_MESSAGE)) for _ in range(count)
    ]


def _rows(sessions: list[str], messages: int) -> Any:
    """(session, seq, role, content JSON, n): message n goes to session n mod S."""
    count = len(sessions)
    for n, text in enumerate(_texts(messages)):
        seq = n // count + 1
        user = seq % 2 == 1
        content: dict[str, Any] = {"type": "text", "text": text}
        if not user:
            content["partial"] = False
        yield (
            sessions[n % count],
            seq,
            "user" if user else "agent",
            orjson.dumps(content).decode(),
            n,
        )


def build_sqlite(
    path: Path, repo_path: Path, sessions: int, messages: int, log: Any
) -> dict[str, Any]:
    migrate(path)
    db = sqlite3.connect(path, isolation_level=None)
    for pragma in (
        "journal_mode=OFF",
        "synchronous=OFF",
        "cache_size=-2000000",
        "foreign_keys=OFF",
    ):
        db.execute(f"PRAGMA {pragma}")
    repo_id = str(uuid.uuid4())
    ids = [str(uuid.uuid4()) for _ in range(sessions)]
    started = time.perf_counter()
    db.execute("BEGIN")
    db.execute(
        "INSERT INTO repos (id, name, path, is_git_repo, created_at) VALUES (?, ?, ?, 0, ?)",
        (repo_id, repo_path.name, str(repo_path), str(_EPOCH)),
    )
    db.executemany(
        "INSERT INTO sessions (id, repo_id, agent_id, status, created_at, updated_at,"
        " last_activity_at, last_seq, needs_context, metadata, isolation, archived)"
        " VALUES (?, ?, 'default', 'completed', ?, ?, ?, 0, 0, '{}', 'none', 0)",
        [(sid, repo_id, *(str(_EPOCH + timedelta(seconds=n)),) * 3) for n, sid in enumerate(ids)],
    )
    batch = []
    for sid, seq, role, content, n in _rows(ids, messages):
        stamp = str(_EPOCH + timedelta(seconds=n))
        batch.append((str(uuid.uuid4()), sid, seq, role, content, stamp))
        if len(batch) == 50_000:
            _insert(db, batch)
            batch = []
    _insert(db, batch)
    db.execute(_migration().SQLITE_UP[-2])  # the FTS rows of every final text (0011's fill)
    db.execute(
        "UPDATE sessions SET last_seq ="
        " (SELECT max(seq) FROM messages m WHERE m.session_id = sessions.id)"
    )
    db.execute("COMMIT")
    seconds = time.perf_counter() - started
    db.execute("PRAGMA journal_mode=WAL")
    db.close()
    fd = path.open("rb+")
    try:
        import os

        os.fsync(fd.fileno())
    finally:
        fd.close()
    log(f"  built {messages:,} messages and their search index in {seconds:.0f} s")
    return {"repo_id": repo_id, "build_s": seconds}


def _insert(db: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    if rows:
        db.executemany(
            "INSERT INTO messages (id, session_id, seq, role, type, partial, dropped, content,"
            " created_at) VALUES (?, ?, ?, ?, 'text', 0, 0, ?, ?)",
            rows,
        )


def set_sqlite_index(path: Path, keep: bool) -> None:
    """Drop the message triggers (the index is no longer kept) or make them again: those
    of a rewind's drop and a delete (0011's; migration 0013 took out its insert trigger:
    the writer adds a final text's row itself, one statement a turn, which a flood of
    chunks never reaches, so it stays in both variants)."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        for name in _SQLITE_TRIGGERS:
            db.execute(f"DROP TRIGGER IF EXISTS {name}")
        if keep:
            for statement in _migration().SQLITE_UP[3:5]:
                db.execute(statement)
    finally:
        db.close()


def _migration(name: str = "0011_sessions_search") -> Any:
    """A migration module, whose statements build the search index as the server's do."""
    import importlib.util

    from benchlib.procs import ROOT

    spec = importlib.util.spec_from_file_location(
        f"m{name}", ROOT / "store" / "migrations" / "versions" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- PostgreSQL ----------------------------------------------------------------------------


def _plain(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


async def _pg_build(url: str, repo_path: Path, sessions: int, messages: int) -> dict[str, Any]:
    import asyncpg

    from store import open_database, upgrade

    database = open_database(url)
    try:
        await upgrade(database)
    finally:
        await database.close()
    db = await asyncpg.connect(_plain(url))
    try:
        repo_id = str(uuid.uuid4())
        ids = [str(uuid.uuid4()) for _ in range(sessions)]
        epoch = _EPOCH.replace(tzinfo=UTC)
        started = time.perf_counter()
        await _pg_index(db, keep=False)
        await db.execute(
            "INSERT INTO repos (id, name, path, is_git_repo, created_at)"
            " VALUES ($1, $2, $3, false, $4)",
            repo_id,
            repo_path.name,
            str(repo_path),
            epoch,
        )
        await db.copy_records_to_table(
            "sessions",
            columns=[
                "id",
                "repo_id",
                "agent_id",
                "status",
                "created_at",
                "updated_at",
                "last_activity_at",
                "last_seq",
                "needs_context",
                "metadata",
                "isolation",
                "archived",
            ],
            records=[
                (
                    sid,
                    repo_id,
                    "default",
                    "completed",
                    *(epoch + timedelta(seconds=n),) * 3,
                    0,
                    False,
                    "{}",
                    "none",
                    False,
                )
                for n, sid in enumerate(ids)
            ],
        )
        batch = []
        for sid, seq, role, content, n in _rows(ids, messages):
            batch.append(
                (
                    str(uuid.uuid4()),
                    sid,
                    seq,
                    role,
                    "text",
                    False,
                    False,
                    content,
                    epoch + timedelta(seconds=n),
                )
            )
            if len(batch) == 50_000:
                await _pg_insert(db, batch)
                batch = []
        await _pg_insert(db, batch)
        await db.execute(
            "UPDATE sessions SET last_seq = m.top FROM (SELECT session_id, max(seq) AS top"
            " FROM messages GROUP BY session_id) m WHERE m.session_id = sessions.id"
        )
        loaded = time.perf_counter() - started
        indexed = await _pg_index(db, keep=True)
        await db.execute("VACUUM ANALYZE")
        return {"repo_id": repo_id, "build_s": loaded, "index_build_s": indexed}
    finally:
        await db.close()


async def _pg_insert(db: Any, rows: list[tuple[Any, ...]]) -> None:
    if rows:
        await db.copy_records_to_table(
            "messages",
            columns=[
                "id",
                "session_id",
                "seq",
                "role",
                "type",
                "partial",
                "dropped",
                "content",
                "created_at",
            ],
            records=rows,
        )


async def _pg_index(db: Any, *, keep: bool) -> float:
    """The message search indexes of 0013 made (keep) or dropped. Its ``search_tsv``
    column stays in both variants: a chunk's is NULL (one CASE), a turn's final text
    computes one ``to_tsvector``."""
    started = time.perf_counter()
    await db.execute("DROP INDEX IF EXISTS ix_messages_search")
    await db.execute("DROP INDEX IF EXISTS ix_messages_search_recent")
    if keep:
        for statement in _migration("0013_search_upkeep").PG_UP:
            if statement.startswith("CREATE INDEX"):
                await db.execute(statement)
    return time.perf_counter() - started


def set_pg_index(url: str, keep: bool) -> float:
    async def go() -> float:
        import asyncpg

        db = await asyncpg.connect(_plain(url))
        try:
            return await _pg_index(db, keep=keep)
        finally:
            await db.close()

    return asyncio.run(go())


# -- the measure -----------------------------------------------------------------------------


def _search_pages(server: Server, samples: int) -> dict[str, Any]:
    from urllib.parse import quote

    out = {}
    for name, q in QUERIES.items():
        figures = page_latency(
            server.port, server.pid, f"/api/sessions?q={quote(q)}&limit=20", samples
        )
        total = server.api("GET", f"/api/sessions?q={quote(q)}&limit=1", expect=200)["total"]
        out[name] = {**figures, "query": q, "sessions_matched": total}
    return out


def run_search(
    workdir: Path,
    log: Any,
    *,
    pg_url: str | None,
    messages: int,
    sessions: int,
    ingest: int,
    rounds: int,
    samples: int,
    skip_sqlite: bool = False,
) -> dict[str, Any]:
    tracker = Tracker()
    ctx = Context(replace(FULL), workdir, tracker, log=log)
    serve_dir = workdir / "server"
    repo_path = (serve_dir / "workspace" / "bench").resolve()
    repo_path.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"messages": messages, "sessions": sessions, "databases": {}}
    try:
        targets: list[tuple[str, str, Any]] = []
        path = workdir / "search.sqlite"
        if not skip_sqlite:
            log(f"SQLite: building {messages:,} final texts over {sessions:,} sessions")
            built = build_sqlite(path, repo_path, sessions, messages, log)
            targets.append(("sqlite", f"sqlite+aiosqlite:///{path}", built))
        if pg_url:
            from benchlib.pg import _drop_database, _fresh_database

            url = asyncio.run(_fresh_database(pg_url))
            log(f"PostgreSQL: building {messages:,} final texts")
            built = asyncio.run(_pg_build(url, repo_path, sessions, messages))
            log(
                f"  loaded in {built['build_s']:.0f} s, GIN index in {built['index_build_s']:.0f} s"
            )
            targets.append(("postgresql", url, built))
        for kind, url, built in targets:
            figures: dict[str, Any] = {"build": built}
            env = {"DATABASE_URL": url, "MAX_CONCURRENT_SESSIONS": "20"}
            ab: dict[str, list[dict[str, Any]]] = {"indexed": [], "unindexed": []}
            if not rounds:  # the search latency alone
                server = Server.start(tracker, serve_dir, env=env, log_name=f"server-{kind}.log")
                try:
                    log(f"  {kind}: search latency")
                    figures["search"] = _search_pages(server, samples)
                finally:
                    tracker.stop(server.process, timeout=60)
            for round_ in range(rounds):
                for variant in (
                    ("indexed", "unindexed") if round_ % 2 == 0 else ("unindexed", "indexed")
                ):
                    keep = variant == "indexed"
                    if kind == "sqlite":
                        set_sqlite_index(path, keep)
                    else:
                        set_pg_index(url, keep)
                    server = Server.start(
                        tracker, serve_dir, env=env, log_name=f"server-{kind}.log"
                    )
                    try:
                        if keep and "search" not in figures:
                            log(f"  {kind}: search latency")
                            figures["search"] = _search_pages(server, samples)
                        log(f"  {kind}: ingest round {round_ + 1} ({variant})")
                        ab[variant].append(
                            _flood(ctx, server, built["repo_id"], f"flood {ingest} text", ingest)
                        )
                    finally:
                        tracker.stop(server.process, timeout=60)
            figures["ingest"] = (
                None
                if not rounds
                else {
                    variant: {
                        "updates_per_s": median(
                            [r["updates_per_s"] for r in runs if r["updates_per_s"]]
                        ),
                        "cpu_us_per_update": median([r["cpu_us_per_update"] for r in runs]),
                        "runs": [
                            {
                                "updates_per_s": r["updates_per_s"],
                                "cpu_us_per_update": r["cpu_us_per_update"],
                            }
                            for r in runs
                        ],
                    }
                    for variant, runs in ab.items()
                }
            )
            results["databases"][kind] = figures
        if pg_url:
            asyncio.run(_drop_database(pg_url, targets[-1][1]))
    finally:
        tracker.stop_all()
    results["problems"] = ctx.problems
    results["time"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    return results


def table(results: dict[str, Any]) -> str:
    lines = [f"search over {results['messages']:,} final texts, {results['sessions']:,} sessions"]
    for kind, figures in results["databases"].items():
        lines.append(f"{kind}:")
        for name, page in figures["search"].items():
            lines.append(
                f"  {name:12} q={page['query']!r:24} p50 {page['p50_ms']:7.1f} ms  "
                f"p95 {page['p95_ms']:7.1f} ms  ({page['sessions_matched']} sessions)"
            )
        if not figures["ingest"]:
            continue
        on, off = figures["ingest"]["indexed"], figures["ingest"]["unindexed"]
        lines.append(
            f"  ingest: {on['updates_per_s']:,.0f}/s indexed vs {off['updates_per_s']:,.0f}/s not "
            f"({(on['updates_per_s'] / off['updates_per_s'] - 1) * 100:+.1f} %); server CPU "
            f"{on['cpu_us_per_update']:.1f} vs {off['cpu_us_per_update']:.1f} us/update "
            f"({(on['cpu_us_per_update'] / off['cpu_us_per_update'] - 1) * 100:+.1f} %)"
        )
    return "\n".join(lines)
