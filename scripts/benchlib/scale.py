"""``python -m benchlib.scale``: the cost as work grows (``scripts/bench-scale``).

One SQLite file is grown with raw inserts (``benchlib.scale_db``) to each size in turn
(default 1, 5 and 20 million messages over 10 000 sessions). At each size the real server
is started on it (``Server.start``: start -> ``/readyz`` 200, the bench's own start-up
measure) and measures, every figure taken the same way at every size:

- ingest: ``flood N text`` through a fresh session to one viewer (``suite._flood``,
  the same job as ``scripts/bench``'s ingest phase), updates/s;
- ``GET /api/sessions/{id}/messages``: the first page (limit 50) of a session, and a deep
  page by cursor (``after=`` near the end of the 100 000-message session);
- ``GET /api/sessions``: the first page and a deep one (the ``nextCursor`` found at
  offset 5 000); ``GET /api/agent-runs``: the first page, a deep one by cursor (the
  middle run) and one session's runs;
- the WebSocket replay of the 100 000-message session to one viewer, messages/s;
- page latencies are p50 over ``samples`` requests on one kept-alive connection.

Then 500 live sessions with idle agents on a fresh server (``suite.phase_scale``):
server RSS growth per session. Writes ``scale.json``, ``scale.md`` and ``scale.png``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchlib.procs import ROOT, Server, Tracker, cpu_seconds
from benchlib.scale_db import ScaleDb
from benchlib.scale_probe import page_latency, replay
from benchlib.stats import median
from benchlib.suite import FULL, Context, _flood, phase_scale

__all__ = ["main", "run"]

FULL_SIZES = (1_000_000, 5_000_000, 20_000_000)
QUICK_SIZES = (70_000, 150_000, 300_000)


def _deep_run_cursor(path: Path) -> str:
    """The runs list's cursor at its middle row (what a client paging there holds)."""
    from server.web.requests import encode_cursor

    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        (count,) = db.execute("SELECT count(*) FROM runs").fetchone()
        created, ident = db.execute(
            "SELECT created_at, id FROM runs ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET ?",
            (count // 2,),
        ).fetchone()
    finally:
        db.close()
    when = datetime.fromisoformat(created).replace(tzinfo=UTC)
    return encode_cursor(when.isoformat(), ident)


def measure(
    ctx: Context, server: Server, db: ScaleDb, ingest: int, ingest_runs: int, samples: int
) -> dict[str, Any]:
    mid = db.session_ids[len(db.session_ids) // 2]
    big, big_count = db.big_session, db.counts[0]
    out: dict[str, Any] = {"startup_s": server.startup_seconds}
    cpu0 = cpu_seconds(server.pid)
    runs = [
        _flood(ctx, server, db.repo_id, f"flood {ingest} text", ingest) for _ in range(ingest_runs)
    ]
    out["ingest"] = {
        "updates_per_s": median([r["updates_per_s"] for r in runs if r["updates_per_s"]]),
        "cpu_us_per_update": median([r["cpu_us_per_update"] for r in runs]),
        "complete": all(r["complete"] and not r["gaps"] for r in runs),
    }
    deep_sessions = server.api("GET", "/api/sessions?limit=20&offset=5000", expect=200)
    cursor = deep_sessions.get("nextCursor") or ""
    pages = {
        "messages_first": f"/api/sessions/{mid}/messages?limit=50",
        "messages_deep": f"/api/sessions/{big}/messages?after={big_count - 75}&limit=50",
        "sessions_first": "/api/sessions?limit=20",
        "sessions_deep": f"/api/sessions?limit=20&cursor={cursor}",
        "runs_first": "/api/agent-runs?limit=20",
        "runs_deep": f"/api/agent-runs?limit=20&cursor={_deep_run_cursor(db.path)}",
        "runs_of_session": f"/api/agent-runs?sessionId={mid}&limit=20",
    }
    out["pages"] = {
        name: page_latency(server.port, server.pid, path, samples) for name, path in pages.items()
    }
    replays = [replay(server.port, server.pid, f"/ws/sessions/{big}") for _ in range(2)]
    best = max(replays, key=lambda r: r["messages_per_s"])
    if best["messages"] != big_count:
        ctx.problems.append(f"replay sent {best['messages']} of {big_count} messages")
    out["replay"] = best
    out["server_cpu_s"] = cpu_seconds(server.pid) - cpu0
    return out


def run(
    sizes: tuple[int, ...],
    workdir: Path,
    log: Any,
    *,
    sessions: int,
    big: int,
    live: int,
    ingest: int,
    ingest_runs: int,
    samples: int,
) -> dict[str, Any]:
    tracker = Tracker()
    ctx = Context(replace(FULL, scale_sessions=live, idle_seconds=3.0), workdir, tracker, log=log)
    serve_dir = workdir / "server"
    repo_path = (serve_dir / "workspace" / "bench").resolve()
    repo_path.mkdir(parents=True, exist_ok=True)
    db = ScaleDb(workdir / "scale.sqlite", repo_path, sessions=sessions, big=big)
    results: dict[str, Any] = {"sizes": []}
    started = time.perf_counter()
    try:
        log(f"schema and {sessions} sessions")
        db.create()
        for size in sizes:
            log(f"growing the database to {size:,} messages (raw sqlite3 inserts)")
            build = db.grow_to(size, log=log)
            log(f"  {build['rows']:,} rows in {build['seconds']:.0f} s; starting the server")
            server = Server.start(
                tracker,
                serve_dir,
                env={
                    "DATABASE_URL": f"sqlite+aiosqlite:///{db.path}",
                    "MAX_CONCURRENT_SESSIONS": "20",
                },
                log_name=f"server-{size}.log",
            )
            try:
                log(f"  measuring at {size:,} (start-up {server.startup_seconds:.2f} s)")
                figures = measure(ctx, server, db, ingest, ingest_runs, samples)
            finally:
                tracker.stop(server.process, timeout=60)
            results["sizes"].append(
                {
                    "messages": db.total,
                    "sessions": sessions,
                    "runs": db.runs,
                    "file_gb": db.path.stat().st_size / 1e9,
                    "build": build,
                    **figures,
                }
            )
        log(f"{live} live sessions with idle agents (fresh server)")
        results["live"] = phase_scale(ctx) if live else None
    finally:
        tracker.stop_all()
        left = tracker.leftovers()
        if left:
            ctx.problems.append(f"processes left running (killed now): {left}")
    results["problems"] = ctx.problems
    results["meta"] = {
        "seconds": time.perf_counter() - started,
        "big_session_messages": big,
        "ingest_updates": ingest,
        "samples": samples,
        "loadavg_after": os.getloadavg(),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "time": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    return results


def main(argv: list[str] | None = None) -> int:
    from benchlib.scale_report import table, write

    parser = argparse.ArgumentParser(prog="scripts/bench-scale", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes: checks it works")
    parser.add_argument("--sizes", help="comma-separated message counts (default 1M,5M,20M)")
    parser.add_argument("--live", type=int, help="live sessions with idle agents (500)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--keep", action="store_true", help="keep the database and logs")
    parser.add_argument(
        "--search", action="store_true", help="only full-text search and its ingest cost"
    )
    parser.add_argument("--pg", help="with --search: also on this PostgreSQL server URL")
    parser.add_argument("--messages", type=int, default=1_000_000, help="with --search")
    parser.add_argument("--skip-sqlite", action="store_true", help="with --search --pg")
    parser.add_argument(
        "--rounds", type=int, default=2, help="with --search: ingest A/B rounds (0: none)"
    )
    args = parser.parse_args(argv)
    if args.search:
        return _search_main(args)
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    if args.sizes:
        sizes = tuple(int(float(s.strip())) for s in args.sizes.split(","))
    workdir = Path(tempfile.mkdtemp(prefix="agent-sessions-scale-"))
    t0 = time.monotonic()

    def log(text: str) -> None:
        print(f"==> [{time.monotonic() - t0:6.1f} s] {text}", file=sys.stderr, flush=True)

    log(f"working in {workdir}")
    try:
        results = run(
            sizes,
            workdir,
            log,
            sessions=1_000 if args.quick else 10_000,
            big=10_000 if args.quick else 100_000,
            live=args.live if args.live is not None else (5 if args.quick else 500),
            ingest=2_000 if args.quick else 20_000,
            ingest_runs=1 if args.quick else 2,
            samples=20 if args.quick else 100,
        )
    except BaseException:
        log(f"failed; logs kept in {workdir}")
        (workdir / "scale.sqlite").unlink(missing_ok=True)
        raise
    print(table(results))
    for path in write(results, args.out):
        log(f"wrote {path}")
    if args.keep:
        log(f"kept {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if results["problems"] else 0


def _search_main(args: argparse.Namespace) -> int:
    """``--search``: benchlib.scale_search; writes search.json next to the other results."""
    import json

    from benchlib.scale_search import run_search, table

    workdir = Path(tempfile.mkdtemp(prefix="agent-sessions-search-"))
    t0 = time.monotonic()

    def log(text: str) -> None:
        print(f"==> [{time.monotonic() - t0:6.1f} s] {text}", file=sys.stderr, flush=True)

    quick = args.quick
    try:
        results = run_search(
            workdir,
            log,
            pg_url=args.pg,
            messages=20_000 if quick else args.messages,
            sessions=200 if quick else 10_000,
            ingest=2_000 if quick else 20_000,
            rounds=args.rounds,
            skip_sqlite=args.skip_sqlite,
            samples=10 if quick else 20,
        )
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print(table(results))
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / "search.json"
    out.write_text(json.dumps(results, indent=2, default=str))
    log(f"wrote {out}")
    return 1 if results["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
