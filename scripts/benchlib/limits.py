"""Limits measured in the same run: raw SQLite inserts, the demo agent's own start-up.

``sqlite_rows_per_second``: stdlib ``sqlite3`` on a file with the server's pragmas (WAL,
``synchronous=NORMAL``, ``busy_timeout``, ``foreign_keys``, the writer thread's page cache, the
page size of a new file, WAL checkpoints on a thread of their own as ``store/checkpoints.py``
runs them) and the server's own schema
(``schema_metadata().create_all``, so the same columns and indexes), inserting the rows the
server would store for the same flood updates (content from the server's ``Translator``,
the raw JSON-RPC frame, ids made like the server's, timestamps), ``BATCH`` rows per transaction
(``executemany`` + commit). JSON encoding (orjson, as the server) and the timestamp are
inside the timed loop.

``agent_start_seconds``: spawn the demo agent and get ``initialize`` and ``session/new``
answered over its pipes; the floor under session-create latency.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["BATCH", "agent_start_seconds", "sqlite_rows_per_second"]

BATCH = 1000


def _rows(
    kind: str, count: int, session_id: str
) -> list[tuple[dict[str, Any], dict[str, Any], str]]:
    """(content, raw frame, type) per flood update, as the server gets them."""
    from agent_bridge.demo_agent.flood import make_update
    from server.sessions.live.translate import Translator

    translator = Translator()
    rows = []
    for i in range(count):
        update = make_update(kind, i, count)
        update["_meta"] = {"demo": {"t": time.time(), "i": i}}
        raw = {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": session_id, "update": update},
        }
        content = translator.translate(update, raw)[-1].content
        rows.append((content, raw, content["type"]))
    return rows


def _schema(path: Path) -> None:
    from sqlalchemy import create_engine

    from store.engine import SQLITE_PAGE_SIZE
    from store.models import schema_metadata

    new = sqlite3.connect(path)  # the server's page size for a new file, set before any write
    new.execute(f"PRAGMA page_size={SQLITE_PAGE_SIZE}")
    new.execute("PRAGMA journal_mode=WAL")
    new.close()
    engine = create_engine(f"sqlite:///{path}")
    schema_metadata().create_all(engine)
    engine.dispose()


def sqlite_rows_per_second(
    workdir: Path, kind: str, count: int, *, inline_checkpoints: bool = False
) -> dict[str, Any]:
    """Rows/s; ``inline_checkpoints``: SQLite's own, inside the COMMIT that takes the WAL
    past 1 000 pages (a plain loop's; the limit before the server moved its checkpoints
    to a thread), instead of the server's checkpoint thread."""
    import orjson

    from server.stream.writer import new_id  # the same ids as the server's rows
    from store.checkpoints import Checkpointer
    from store.engine import sqlite_pragmas
    from store.hot_writes import WRITER_CACHE_KIB

    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"limit-{kind}{'-inline' if inline_checkpoints else ''}.sqlite"
    for leftover in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        leftover.unlink(missing_ok=True)  # a new file each run, as the first run's
    _schema(path)
    session_id, run_id = str(uuid.uuid4()), str(uuid.uuid4())
    rows = _rows(kind, count, session_id)
    db = sqlite3.connect(path, isolation_level=None)
    for pragma in (
        *sqlite_pragmas(),  # the server's connections'
        f"cache_size=-{WRITER_CACHE_KIB}",  # as the server's writer thread
        # checkpoints on a thread of their own, as the server's
        *(() if inline_checkpoints else ("wal_autocheckpoint=0",)),
    ):
        db.execute(f"PRAGMA {pragma}")
    checkpoints = None if inline_checkpoints else Checkpointer(str(path))
    now = datetime.now(UTC).replace(tzinfo=None)
    db.execute("INSERT INTO repos VALUES (?, ?, ?, ?, ?)", ("r", "r", "/r", 0, str(now)))
    db.execute(
        "INSERT INTO sessions (id, repo_id, agent_id, status, created_at, updated_at,"
        " last_activity_at, last_seq, needs_context, metadata)"
        " VALUES (?, 'r', 'default', 'active', ?, ?, ?, 0, 0, '{}')",
        (session_id, str(now), str(now), str(now)),
    )
    columns = (
        "id, session_id, seq, run_id, step_number, role, type, partial, dropped, content, raw,"
        " created_at"
    )
    # constant column list and placeholders: nothing from outside goes into the SQL
    sql = f"INSERT INTO messages ({columns}) VALUES ({', '.join('?' * 12)})"  # noqa: S608
    dumps = orjson.dumps
    started = time.perf_counter()
    for start in range(0, count, BATCH):
        stamp = datetime.now(UTC).replace(tzinfo=None).isoformat(" ")
        params = [
            (
                new_id(),
                session_id,
                start + n + 1,
                run_id,
                0,
                "agent",
                kind_,
                True,
                False,
                dumps(content).decode(),
                dumps(raw).decode(),
                stamp,
            )
            for n, (content, raw, kind_) in enumerate(rows[start : start + BATCH])
        ]
        db.execute("BEGIN IMMEDIATE")
        db.executemany(sql, params)
        db.execute("COMMIT")
        if checkpoints is not None:
            checkpoints.wrote(len(params))
    seconds = time.perf_counter() - started
    if checkpoints is not None:
        checkpoints.close()
    stored = db.execute("SELECT count(*) FROM messages").fetchone()[0]
    db.close()
    if stored != count:
        raise RuntimeError(f"sqlite limit stored {stored} of {count} rows")
    return {"rows": count, "batch": BATCH, "seconds": seconds, "rows_per_s": count / seconds}


def agent_start_seconds(cwd: Path, runs: int) -> list[float]:
    """Spawn → ``session/new`` answered, for the demo agent, ``runs`` times in a row."""
    cwd.mkdir(parents=True, exist_ok=True)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "agent_bridge.demo_agent"],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert process.stdin is not None and process.stdout is not None
        try:
            calls = [
                (
                    "initialize",
                    {
                        "protocolVersion": 1,
                        "clientCapabilities": {
                            "fs": {"readTextFile": True, "writeTextFile": True},
                            "terminal": False,
                        },
                    },
                ),
                ("session/new", {"cwd": str(cwd), "mcpServers": []}),
            ]
            for n, (method, params) in enumerate(calls, 1):
                process.stdin.write(
                    json.dumps(
                        {"jsonrpc": "2.0", "id": n, "method": method, "params": params}
                    ).encode()
                    + b"\n"
                )
                process.stdin.flush()
                while True:
                    line = process.stdout.readline()
                    if not line:
                        raise RuntimeError("the demo agent exited during start")
                    if json.loads(line).get("id") == n:
                        break
            times.append(time.perf_counter() - started)
        finally:
            process.stdin.close()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            process.stdout.close()
    return times
