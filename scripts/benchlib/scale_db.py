"""The databases of ``scripts/bench-scale``: N messages over 10 000 sessions, built with
raw ``sqlite3`` inserts (``executemany``), never through the server.

The schema is the server's own: ``store.migrate.upgrade`` runs once on the file, then
rows go in directly. ``ScaleDb.grow_to(n)`` appends messages until the file holds ``n``
of the built ones, so the 1, 5 and 20 million databases are one file grown in steps
(measured between steps). Shape:

- one repository (the bench's ``bench`` folder) and ``sessions`` completed sessions,
  created one second apart;
- one session (the "big" one) holds ``big`` messages: the WebSocket replay reads it;
- the others share the rest equally, in runs of ``PER_RUN`` messages (a ``runs`` row
  each, so the runs table grows with the messages: 200 000 runs at 20 million);
- every message is a flood text chunk as the server stores it (content from the server's
  ``Translator``, the raw JSON-RPC frame, time-ordered version 7 ids as ``new_id`` makes).

The build uses ``journal_mode=OFF`` and ``synchronous=OFF`` (a benchmark fixture: a crash
mid-build means building again), then leaves the file in WAL mode, synced, as the server
keeps it.
"""

from __future__ import annotations

import os
import sqlite3
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

__all__ = ["PER_RUN", "ScaleDb", "migrate"]

PER_RUN = 100
BATCH = 50_000  # rows per executemany (and per commit)
_EPOCH = datetime(2026, 1, 1)  # naive UTC, as the server stores on SQLite


def migrate(path: Path) -> None:
    """The server's schema on a fresh file, through its own migrations."""
    import anyio

    from store import open_database, upgrade

    async def run() -> None:
        db = open_database(f"sqlite+aiosqlite:///{path}")
        try:
            await upgrade(db)
        finally:
            await db.close()

    anyio.run(run)


def _templates(count: int = 64) -> list[tuple[str, str]]:
    """(content JSON, raw frame JSON) of flood text chunks, as the server stores them."""
    import orjson

    from agent_bridge.demo_agent.flood import make_update
    from server.sessions.live.translate import Translator

    translator, out = Translator(), []
    for i in range(count):
        update = make_update("text", i, count)
        update["_meta"] = {"demo": {"t": 1.0e9 + i, "i": i}}
        raw = {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": "agent-session", "update": update},
        }
        content = translator.translate(update, raw)[-1].content
        out.append((orjson.dumps(content).decode(), orjson.dumps(raw).decode()))
    return out


class _Ids:
    """Version 7 UUID strings in strictly increasing order (like ``new_id``), cheaply."""

    def __init__(self) -> None:
        self.millis = int(time.time() * 1000)
        self.counter = 0
        self.tail = int.from_bytes(os.urandom(8)) & ((1 << 62) - 1)

    def __next__(self) -> str:
        self.counter += 1
        if self.counter >= 4096:
            self.millis, self.counter = self.millis + 1, 0
        value = (self.millis << 80) | (7 << 76) | (self.counter << 64) | (2 << 62) | self.tail
        h = f"{value:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@dataclass
class ScaleDb:
    path: Path
    repo_path: Path
    sessions: int = 10_000
    big: int = 100_000
    repo_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    session_ids: list[str] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)  # messages built per session
    last_run: list[str] = field(default_factory=list)  # the run of each one's last message
    runs: int = 0

    @property
    def big_session(self) -> str:
        return self.session_ids[0]

    @property
    def total(self) -> int:
        return sum(self.counts)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None)
        for pragma in (
            "journal_mode=OFF",
            "synchronous=OFF",
            "cache_size=-2000000",  # 2 GB: the indexes stay in memory while they grow
            "temp_store=MEMORY",
            "foreign_keys=OFF",
        ):
            db.execute(f"PRAGMA {pragma}")
        return db

    def create(self) -> None:
        """Migrate a fresh file, then the repository and the sessions (no messages)."""
        migrate(self.path)
        db = self._connect()
        try:
            db.execute("BEGIN")
            db.execute(
                "INSERT INTO repos (id, name, path, is_git_repo, created_at)"
                " VALUES (?, ?, ?, 0, ?)",
                (self.repo_id, self.repo_path.name, str(self.repo_path), str(_EPOCH)),
            )
            self.session_ids = [str(uuid.uuid4()) for _ in range(self.sessions)]
            self.counts = [0] * self.sessions
            self.last_run = [""] * self.sessions
            rows = []
            for n, sid in enumerate(self.session_ids):
                stamp = str(_EPOCH + timedelta(seconds=n))
                rows.append((sid, self.repo_id, stamp, stamp, stamp))
            db.executemany(
                "INSERT INTO sessions (id, repo_id, agent_id, status, created_at, updated_at,"
                " last_activity_at, last_seq, needs_context, metadata, isolation)"
                " VALUES (?, ?, 'default', 'completed', ?, ?, ?, 0, 0, '{}', 'none')",
                rows,
            )
            db.execute("COMMIT")
        finally:
            db.close()

    def _targets(self, total: int) -> list[int]:
        big = min(self.big, total)
        each = (total - big) // max(self.sessions - 1, 1)
        return [big] + [each] * (self.sessions - 1)

    def _message_rows(
        self, targets: list[int], templates: list[tuple[str, str]], runs: list[tuple[str, ...]]
    ) -> Iterator[tuple[object, ...]]:
        ids = _Ids()
        now = datetime.now(UTC).replace(tzinfo=None)
        stamp = str(now)
        for n, (sid, have, want) in enumerate(
            zip(self.session_ids, self.counts, targets, strict=True)
        ):
            run_id = self.last_run[n]
            for seq in range(have + 1, want + 1):
                if (seq - 1) % PER_RUN == 0:
                    run_id = str(uuid.uuid4())
                    when = str(now - timedelta(milliseconds=self.runs + len(runs)))
                    runs.append((run_id, sid, self.repo_id, when, when))
                content, raw = templates[seq % len(templates)]
                yield (next(ids), sid, seq, run_id, "agent", "text", content, raw, stamp)
            self.counts[n], self.last_run[n] = max(have, want), run_id

    def grow_to(self, total: int, log: object = print) -> dict[str, float]:
        """Append messages (and their runs) until ``total`` are built; rows/s of the step."""
        templates = _templates()
        targets = self._targets(total)
        db = self._connect()
        runs: list[tuple[str, ...]] = []
        added, started = 0, time.perf_counter()
        sql = (
            "INSERT INTO messages (id, session_id, seq, run_id, step_number, role, type,"
            " partial, dropped, content, raw, created_at)"
            " VALUES (?, ?, ?, ?, 0, ?, ?, 1, 0, ?, ?, ?)"
        )
        try:
            batch: list[tuple[object, ...]] = []
            for row in self._message_rows(targets, templates, runs):
                batch.append(row)
                if len(batch) >= BATCH:
                    db.execute("BEGIN")
                    db.executemany(sql, batch)
                    db.execute("COMMIT")
                    added += len(batch)
                    batch.clear()
                    if added % 1_000_000 < BATCH and callable(log):
                        rate = added / (time.perf_counter() - started)
                        log(f"    {added:,} rows ({rate:,.0f}/s)")
            db.execute("BEGIN")
            if batch:
                db.executemany(sql, batch)
                added += len(batch)
            db.executemany(
                "INSERT INTO runs (id, session_id, repo_id, agent_id, status, stop_reason,"
                " step_count, max_steps, created_at, completed_at, duration_ms)"
                " VALUES (?, ?, ?, 'default', 'completed', 'end_turn', 0, 50, ?, ?, 1000)",
                runs,
            )
            db.executemany(
                "UPDATE sessions SET last_seq = ? WHERE id = ?",
                [(c, s) for s, c in zip(self.session_ids, self.counts, strict=True)],
            )
            db.execute("COMMIT")
            db.execute("PRAGMA journal_mode=WAL")  # as the server keeps it
        finally:
            db.close()
        # On disk before the server starts: with synchronous=OFF neither the build nor the
        # switch to WAL synced anything, and the build's dirty pages (GBs) were written back
        # by the server's first checkpoint's fsync, on its CPU, in the measured ingest: the
        # step after the biggest build (5 M, 4 M rows added) read ~2x the others' server
        # CPU per update (19.5 and 22 us against 12-13.5) with the rate itself flat.
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self.runs += len(runs)
        seconds = time.perf_counter() - started
        return {"rows": added, "seconds": seconds, "rows_per_s": added / max(seconds, 1e-9)}
