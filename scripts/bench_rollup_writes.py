"""scripts/bench_rollup_writes.py: what the roll-up's triggers (migration 0006) cost the hot
writer on SQLite, in CPU time of the writer's thread (``time.thread_time``; the machine may
be shared, wall time would measure the neighbours).

Writes the same batches through ``SqliteHotWriter.commit_sync`` (the writer thread's code)
into fresh migrated databases: once with the stats triggers as migrated, once with them
dropped. Phases: ``tools`` (each call: insert pending, update in_progress, two output
updates, update completed; 5 % end in error), ``text`` (message rows and session activity:
no trigger on those tables, the control) and ``runs`` (a run row inserted, then completed).
Prints the best of ``--repeat`` rounds per phase and variant. Figures go in docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from store import open_database, rollup, upgrade
from store.hot_batch import HotBatch, ToolCallInsert, ToolCallUpdate
from store.hot_writes import SqliteHotWriter
from store.message_row import MessageRow, sqlite_stamp

REPO = "00000000-0000-4000-8000-000000000001"
SESSION = "00000000-0000-4000-8000-000000000002"
TOOLS = ("Read file", "Edit file", "Run tests", "Search", "List dir", "Write file")


async def _migrate(url: str) -> None:
    db = open_database(url)
    try:
        await upgrade(db)
    finally:
        await db.close()


def fresh(directory: Path, name: str, *, triggers: bool) -> Path:
    path = directory / f"{name}.db"
    asyncio.run(_migrate(f"sqlite+aiosqlite:///{path}"))
    now = sqlite_stamp(datetime.now(UTC))
    with sqlite3.connect(path) as conn:
        if not triggers:
            for statement in rollup.drop_trigger_sql("sqlite"):
                conn.execute(statement)
        conn.execute("INSERT INTO repos VALUES (?, 'bench', '/bench', 0, ?)", (REPO, now))
        conn.execute(
            "INSERT INTO sessions (id, repo_id, agent_id, status, created_at, updated_at, "
            "last_activity_at, last_seq, needs_context, metadata) VALUES (?, ?, 'demo', "
            "'running', ?, ?, ?, 0, 0, '{}')",
            (SESSION, REPO, now, now, now),
        )
    return path


def _run_rows(conn: sqlite3.Connection, count: int) -> list[str]:
    now = sqlite_stamp(datetime.now(UTC))
    ids = [str(uuid.uuid4()) for _ in range(count)]
    conn.executemany(
        "INSERT INTO runs (id, session_id, repo_id, agent_id, status, step_count, max_steps, "
        "created_at) VALUES (?, ?, ?, 'demo', 'running', 0, 50, ?)",
        [(i, SESSION, REPO, now) for i in ids],
    )
    return ids


def tools_phase(path: Path, runs: int, calls: int, batch: int) -> float:
    """CPU seconds of the writer for ``runs`` x ``calls`` tool calls' lifecycles."""
    with sqlite3.connect(path, isolation_level=None) as conn:
        run_ids = _run_rows(conn, runs)
    ops: list[list[Any]] = []
    for r, run_id in enumerate(run_ids):
        rows = [str(uuid.uuid4()) for _ in range(calls)]
        life: list[list[Any]] = [[], [], [], [], []]
        for c, row_id in enumerate(rows):
            name = TOOLS[(r + c) % len(TOOLS)]
            base = {"tool_name": name, "kind": "read", "input": '{"a": 1}'}
            life[0].append(
                ToolCallInsert(
                    {
                        "id": row_id,
                        "run_id": run_id,
                        "session_id": SESSION,
                        "tool_call_id": f"c{c}",
                        "step_number": c + 1,
                        "created_at": datetime.now(UTC),
                        **base,
                        "status": "pending",
                    },
                    run_id,
                    c + 1,
                )
            )
            life[1].append(
                _update(row_id, {**base, "status": "in_progress", "started_at": datetime.now(UTC)})
            )
            for k in (2, 3):
                life[k].append(
                    _update(row_id, {**base, "status": "in_progress", "output": f'"{k}"'})
                )
            end = "error" if (r * calls + c) % 20 == 0 else "completed"
            life[4].append(
                _update(
                    row_id,
                    {
                        **base,
                        "status": end,
                        "duration_ms": 40 + 37 * c,
                        "completed_at": datetime.now(UTC),
                    },
                )
            )
        ops.extend(life)
    flat = [op for stage in ops for op in stage]
    writer = SqliteHotWriter(str(path))
    batches = [HotBatch(tools=flat[i : i + batch]) for i in range(0, len(flat), batch)]
    start = time.thread_time()
    for b in batches:
        writer.commit_sync(b)
    return time.thread_time() - start


def _update(row_id: str, values: dict[str, Any]) -> ToolCallUpdate:
    return ToolCallUpdate(row_id, lambda: values)


def text_phase(path: Path, messages: int, batch: int) -> float:
    with sqlite3.connect(path, isolation_level=None) as conn:
        run_id = _run_rows(conn, 1)[0]
    stamp = sqlite_stamp(datetime.now(UTC))
    rows = [
        MessageRow(
            id=str(uuid.uuid4()),
            session_id=SESSION,
            seq=seq,
            run_id=run_id,
            step_number=1,
            role="assistant",
            type="text",
            partial=True,
            dropped=False,
            content='"chunk of text"',
            raw=None,
            created_at=stamp,
        )
        for seq in range(1, messages + 1)
    ]
    writer = SqliteHotWriter(str(path))
    batches = [
        HotBatch(messages=rows[i : i + batch], activity={SESSION: (rows[i + batch - 1].seq, stamp)})
        for i in range(0, len(rows), batch)
    ]
    start = time.thread_time()
    for b in batches:
        writer.commit_sync(b)
    return time.thread_time() - start


def runs_phase(path: Path, runs: int) -> float:
    """A run row inserted then completed (with usage), one transaction each, as the store does."""
    stamp = sqlite_stamp(datetime.now(UTC))
    ids = [str(uuid.uuid4()) for _ in range(runs)]
    conn = sqlite3.connect(path, isolation_level=None)
    start = time.thread_time()
    for run_id in ids:
        conn.execute(
            "INSERT INTO runs (id, session_id, repo_id, agent_id, status, step_count, max_steps, "
            "created_at) VALUES (?, ?, ?, 'demo', 'running', 0, 50, ?)",
            (run_id, SESSION, REPO, stamp),
        )
    for n, run_id in enumerate(ids):
        conn.execute(
            "UPDATE runs SET status='completed', duration_ms=?, completed_at=?, input_tokens=?, "
            "output_tokens=?, cached_tokens=0, cost_amount=?, cost_currency='USD', "
            "tool_call_count=?, tool_failure_count=0 WHERE id=?",
            (1000 + n, stamp, 5000 + n, 300, 0.01, n % 5, run_id),
        )
    elapsed = time.thread_time() - start
    conn.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--calls", type=int, default=10, help="tool calls per run")
    parser.add_argument("--batch", type=int, default=50, help="ops per writer transaction")
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    phases: dict[str, Callable[[Path], float]] = {
        "tools": lambda p: tools_phase(p, args.runs, args.calls, args.batch),
        "text": lambda p: text_phase(p, args.messages, args.batch),
        "runs": lambda p: runs_phase(p, args.runs * 5),
    }
    best: dict[tuple[str, bool], float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.repeat):
            for name, phase in phases.items():
                for triggers in (True, False):
                    path = fresh(Path(tmp), f"{name}-{triggers}-{round_}", triggers=triggers)
                    seconds = phase(path)
                    key = (name, triggers)
                    best[key] = min(best.get(key, seconds), seconds)
    ops = args.runs * args.calls
    print(f"tools: {ops} calls x 5 writes in batches of {args.batch}; text: {args.messages} rows;")
    print(f"runs: {args.runs * 5} inserts + completions (CPU ms, best of {args.repeat})")
    for name in phases:
        on, off = best[(name, True)], best[(name, False)]
        print(f"{name:6} triggers {on * 1000:8.1f}  dropped {off * 1000:8.1f}  x{on / off:5.2f}")


if __name__ == "__main__":
    main()
