"""The phases of the benchmark: start-up, limits, ingest, latency, fan-out, scale.

Each phase returns plain dicts (they become the JSON). Figures and how they are taken:

- ingest: one viewer, ``flood N`` unpaced; updates/s = N / (receive time of the last
  update at the viewer - the agent's write stamp of the first). Server CPU per update is
  the server process's utime+stime over the run, from ``/proc``.
- latency: one viewer, ``flood n rate=R``; per update, viewer receive time - agent stamp.
- fan-out: V viewers in one client process; deliveries/s = V * N / (last receive at any
  viewer - the first stamp).
- the bare relay gets the same jobs from the same client code.
- sandbox: see ``benchlib.sandbox``.
- scale: sessions created one after another (each waits for its agent's initialize and
  session/new); RSS from ``/proc/<pid>/status``; idle CPU over a few quiet seconds.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchlib import limits
from benchlib.procs import (
    Server,
    Tracker,
    cpu_seconds,
    free_port,
    is_guard,
    rss_kib,
    wait_http_ok,
)
from benchlib.sandbox import phase_sandbox
from benchlib.stats import median, summary

__all__ = ["FULL", "QUICK", "Sizes", "run_suite"]


@dataclass(frozen=True)
class Sizes:
    startup_runs: int = 9
    sqlite_text_rows: int = 50_000
    sqlite_tool_rows: int = 20_000
    agent_start_runs: int = 5
    ingest_text: int = 40_000
    ingest_tool: int = 16_000
    ingest_runs: int = 3
    limit_runs: int = 3  # raw sqlite3 limits: the best of these
    latency_rates: tuple[int, ...] = (100, 1000, 5000)
    latency_seconds: float = 4.0
    fanout: tuple[tuple[int, int], ...] = ((1, 20_000), (10, 5_000), (100, 3_000))
    scale_sessions: int = 100
    sandbox_runs: int = 10
    idle_seconds: float = 5.0
    job_timeout: float = 120.0


FULL = Sizes()
QUICK = Sizes(
    startup_runs=1,
    sqlite_text_rows=2_000,
    sqlite_tool_rows=200,
    agent_start_runs=1,
    ingest_text=500,
    ingest_tool=50,
    ingest_runs=1,
    limit_runs=1,
    latency_seconds=0.3,
    fanout=((1, 200), (10, 50), (100, 10)),
    scale_sessions=3,
    sandbox_runs=2,
    idle_seconds=0.5,
    job_timeout=60.0,
)


@dataclass
class Context:
    sizes: Sizes
    workdir: Path
    tracker: Tracker = field(default_factory=Tracker)
    problems: list[str] = field(default_factory=list)
    log: Any = print


# -- helpers ----------------------------------------------------------------------------


def _viewers(
    ctx: Context, url: str, viewers: int, expect: int, prompt: str, *, latency: bool
) -> dict[str, Any]:
    """Run one client job in its own process; its result dict."""
    job = {
        "url": url,
        "viewers": viewers,
        "expect": expect,
        "prompt": prompt,
        "timeout": ctx.sizes.job_timeout,
        "latency": latency,
    }
    import subprocess

    process = ctx.tracker.spawn(
        [sys.executable, "-m", "benchlib.viewers", json.dumps(job)],
        stdout=subprocess.PIPE,
        log=ctx.workdir / "viewers.log",
    )
    try:
        out, _ = process.communicate(timeout=ctx.sizes.job_timeout + 60)
    except subprocess.TimeoutExpired:
        ctx.tracker.stop(process)
        raise RuntimeError(f"viewer job did not finish: {prompt!r} x{viewers}") from None
    if process.returncode != 0 or not out.strip():
        raise RuntimeError(
            f"viewer job failed ({process.returncode}): see {ctx.workdir / 'viewers.log'}"
        )
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    problems = []
    if result["complete"] < viewers:
        problems.append(f"{result['complete']}/{viewers} viewers got all {expect} updates")
    if result["gaps"]:
        problems.append(f"{result['gaps']} seq gaps")
    if result["close_codes"] or result["errors"]:
        problems.append(f"closes {result['close_codes']} errors {result['errors']}")
    if problems:
        ctx.problems.append(f"{prompt!r} x{viewers}: " + "; ".join(problems))
    return result


def flood_rate(result: dict[str, Any], count: int) -> float | None:
    """Updates (or deliveries) per second from the first write to the last receipt."""
    if result["last_recv"] is None or result["first_t"] is None:
        return None
    return count / max(result["last_recv"] - result["first_t"], 1e-9)


def _ratio(value: float | None, limit: float | None) -> float | None:
    if value is None or not limit:
        return None
    return value / limit


class _Bare:
    """The bare relay process."""

    def __init__(self, ctx: Context) -> None:
        self.port = free_port()
        self.process = ctx.tracker.spawn(
            [sys.executable, "-m", "benchlib.bare", "relay", str(self.port)],
            log=ctx.workdir / "bare.log",
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the bare relay did not start") from None
                time.sleep(0.01)  # polling a process we do not control

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"


def _session(server: Server, repo_id: str) -> str:
    return str(server.api("POST", "/api/sessions", {"repoId": repo_id}, expect=201)["id"])


def _flood(
    ctx: Context,
    target: Server | _Bare,
    repo_id: str | None,
    prompt: str,
    count: int,
    viewers: int = 1,
    *,
    latency: bool = False,
) -> dict[str, Any]:
    """One flood through the real server (a fresh session, completed afterwards) or the
    bare relay; the result with rate and server CPU per update."""
    if isinstance(target, Server):
        assert repo_id is not None
        session_id = _session(target, repo_id)
        url, pid = f"{target.ws_url}/ws/sessions/{session_id}", target.pid
    else:
        session_id, url, pid = None, target.url, target.process.pid
    cpu0 = cpu_seconds(pid)
    result = _viewers(ctx, url, viewers, count, prompt, latency=latency)
    cpu1 = cpu_seconds(pid)
    if isinstance(target, Server) and session_id is not None:
        target.api("POST", f"/api/sessions/{session_id}/complete", expect=200)
    deliveries = count * viewers
    return {
        "prompt": prompt,
        "viewers": viewers,
        "updates": count,
        "updates_per_s": flood_rate(result, count),
        "deliveries_per_s": flood_rate(result, deliveries),
        "producer_per_s": (count / (result["last_t"] - result["first_t"]))
        if result["last_t"] and result["first_t"] and result["last_t"] > result["first_t"]
        else None,
        "server_cpu_s": cpu1 - cpu0,
        "cpu_us_per_update": (cpu1 - cpu0) / count * 1e6,
        "cpu_us_per_delivery": (cpu1 - cpu0) / deliveries * 1e6,
        "latency_ms": {
            k: (v * 1e3 if isinstance(v, float) else v)
            for k, v in summary(result["latencies"]).items()
        }
        if latency
        else None,
        "complete": result["complete"] == viewers,
        "gaps": result["gaps"],
    }


# -- phases -----------------------------------------------------------------------------


def phase_startup(ctx: Context) -> dict[str, Any]:
    """Process start → /readyz 200: a restart on a database whose schema is current (the
    plain start the target is about: no migrations run), the first start on a new file
    (the migrations run), a bare uvicorn app, and the bare app with SQLAlchemy's asyncio
    ORM opening that database (``bare stack``: the limit the target is measured
    against), interleaved. The restart and the bare stack run back to back, in turns
    first (this machine's speed drifts by 20-40 % within a minute), and each round's
    ratio of the two is kept: their median is the figure the target is read on."""
    real, first, bare, stack, ratios = [], [], [], [], []
    cpu: dict[str, list[float]] = {"server": [], "stack": []}  # CPU seconds when ready

    def bare_app(mode: str, *args: str) -> float:
        port = free_port()
        started = time.perf_counter()
        process = ctx.tracker.spawn(
            [sys.executable, "-m", "benchlib.bare", mode, str(port), *args],
            log=ctx.workdir / f"bare-{mode}.log",
        )
        try:
            ready = wait_http_ok(f"http://127.0.0.1:{port}", "/readyz", process, 60)
            if mode == "stack":
                cpu["stack"].append(cpu_seconds(process.pid))
            return ready - started
        finally:
            ctx.tracker.stop(process)

    def restart(directory: Path) -> float:
        server = Server.start(  # the same directory: the same database file, migrated
            ctx.tracker, directory, log_name="server-restart.log"
        )
        cpu["server"].append(cpu_seconds(server.pid))
        ctx.tracker.stop(server.process)
        return server.startup_seconds

    for n in range(ctx.sizes.startup_runs):
        directory = ctx.workdir / f"startup-{n}"
        server = Server.start(ctx.tracker, directory)
        first.append(server.startup_seconds)
        ctx.tracker.stop(server.process)
        bare.append(bare_app("http"))
        database = str(directory / "db.sqlite")  # the server's, migrated
        if n % 2:
            real.append(restart(directory))
            stack.append(bare_app("stack", database))
        else:
            stack.append(bare_app("stack", database))
            real.append(restart(directory))
        ratios.append(real[-1] / stack[-1])
    return {
        "stack_runs_s": stack,
        "stack_median_s": median(stack),
        "runs_s": real,
        "median_s": median(real),
        "max_s": max(real),
        "first_runs_s": first,
        "first_median_s": median(first),
        "bare_runs_s": bare,
        "bare_median_s": median(bare),
        "stack_ratios": ratios,
        "stack_ratio_median": median(ratios),
        # the CPU each had used when ready: steadier than wall time on a shared machine
        "cpu_s": median(cpu["server"]),
        "stack_cpu_s": median(cpu["stack"]),
    }


def phase_limits(ctx: Context) -> dict[str, Any]:
    sizes = ctx.sizes
    agent = limits.agent_start_seconds(ctx.workdir / "agent-floor", sizes.agent_start_runs)

    def best(kind: str, rows: int, *, inline_checkpoints: bool = False) -> dict[str, Any]:
        """The best of ``limit_runs``: a limit is what the machine can do (one run of a
        fraction of a second moved by 20-30 % from run to run)."""
        runs = [
            limits.sqlite_rows_per_second(
                ctx.workdir / "limits", kind, rows, inline_checkpoints=inline_checkpoints
            )
            for _ in range(sizes.limit_runs)
        ]
        top = max(runs, key=lambda run: float(run["rows_per_s"]))
        return {**top, "runs_rows_per_s": [run["rows_per_s"] for run in runs]}

    return {
        "sqlite_text": best("text", sizes.sqlite_text_rows),
        "sqlite_tool": best("tool", sizes.sqlite_tool_rows),
        **{
            f"sqlite_{kind}_inline": best(kind, rows, inline_checkpoints=True)
            for kind, rows in (("text", sizes.sqlite_text_rows), ("tool", sizes.sqlite_tool_rows))
        },
        "agent_start_s": {"runs": agent, "p50": median(agent), "max": max(agent)},
    }


def phase_relay(ctx: Context, server: Server, bare: _Bare, repo_id: str) -> dict[str, Any]:
    """Ingest, latency and fan-out, each configuration run on the server, then the relay."""
    sizes = ctx.sizes
    ingest: dict[str, Any] = {}
    for kind, count in (("text", sizes.ingest_text), ("tool", sizes.ingest_tool)):
        prompt = f"flood {count} {kind}"
        runs, bare_runs = [], []
        for n in range(sizes.ingest_runs):
            ctx.log(f"  ingest {kind} run {n + 1}/{sizes.ingest_runs}")
            runs.append(_flood(ctx, server, repo_id, prompt, count))
            bare_runs.append(_flood(ctx, bare, None, prompt, count))
        ingest[kind] = {
            "runs": runs,
            "bare_runs": bare_runs,
            "updates_per_s": median([r["updates_per_s"] for r in runs if r["updates_per_s"]]),
            "cpu_us_per_update": median([r["cpu_us_per_update"] for r in runs]),
            "producer_per_s": median([r["producer_per_s"] for r in runs if r["producer_per_s"]]),
            "bare_updates_per_s": median(
                [r["updates_per_s"] for r in bare_runs if r["updates_per_s"]]
            ),
        }
    latency: dict[str, Any] = {}
    for rate in sizes.latency_rates:
        count = max(20, int(rate * sizes.latency_seconds))
        ctx.log(f"  latency at {rate}/s ({count} updates)")
        prompt = f"flood {count} text rate={rate}"
        latency[str(rate)] = {
            "server": _flood(ctx, server, repo_id, prompt, count, latency=True),
            "bare": _flood(ctx, bare, None, prompt, count, latency=True),
        }
    fanout: dict[str, Any] = {}
    for viewers, count in sizes.fanout:
        ctx.log(f"  fan-out to {viewers} viewers ({count} updates)")
        prompt = f"flood {count} text"
        fanout[str(viewers)] = {
            "server": _flood(ctx, server, repo_id, prompt, count, viewers),
            "bare": _flood(ctx, bare, None, prompt, count, viewers),
        }
    return {"ingest": ingest, "latency": latency, "fanout": fanout, "store": _store_metrics(server)}


def _store_metrics(server: Server) -> dict[str, Any]:
    """Commit batch size and latency over the whole run, from the server's /metrics."""
    values: dict[str, float] = {}
    for line in server.metrics_text().splitlines():
        if line.startswith(
            ("agent_sessions_store_batch_rows_", "agent_sessions_store_commit_seconds_")
        ):
            name, _, value = line.rpartition(" ")
            if name.endswith(("_sum", "_count")):
                values[name] = float(value)
    commits = values.get("agent_sessions_store_commit_seconds_count", 0)
    return {
        "commits": commits,
        "rows_per_commit": values.get("agent_sessions_store_batch_rows_sum", 0) / commits
        if commits
        else None,
        "mean_commit_ms": values.get("agent_sessions_store_commit_seconds_sum", 0) / commits * 1e3
        if commits
        else None,
    }


def phase_scale(ctx: Context) -> dict[str, Any]:
    count = ctx.sizes.scale_sessions
    server = Server.start(
        ctx.tracker,
        ctx.workdir / "scale",
        env={"MAX_CONCURRENT_SESSIONS": str(count + 10)},
        log_name="server.log",
    )
    try:
        repo_id = server.api("POST", "/api/repos", {"path": "bench"}, expect=201)["id"]
        rss_idle = rss_kib(server.pid)
        latencies, rss_first = [], 0
        for n in range(count):
            started = time.perf_counter()
            _session(server, repo_id)
            latencies.append(time.perf_counter() - started)
            if n == 0:
                rss_first = rss_kib(server.pid)
        rss_all = rss_kib(server.pid)
        below = ctx.tracker.note_descendants(server.pid)
        guards = [pid for pid in below if is_guard(pid)]  # one per agent
        agents = [pid for pid in below if pid not in guards]
        agent_rss = sum(rss_kib(pid) for pid in agents)
        guard_rss = sum(rss_kib(pid) for pid in guards)
        agent_cpu0 = sum(cpu_seconds(pid) for pid in agents)
        cpu0, t0 = cpu_seconds(server.pid), time.perf_counter()
        time.sleep(
            ctx.sizes.idle_seconds
        )  # the measurement window itself: nothing happens on purpose
        cpu1, t1 = cpu_seconds(server.pid), time.perf_counter()
        agent_cpu1 = sum(cpu_seconds(pid) for pid in agents)
        active = server.api("GET", "/api/sessions?status=active&limit=1", expect=200)["total"]
    finally:
        stop_s = ctx.tracker.stop(server.process, timeout=60)
    left = [pid for pid in below if os.path.exists(f"/proc/{pid}")]
    if left:
        ctx.problems.append(f"agents still running after the server stopped: {left}")
    per_session = (rss_all - rss_first) / max(count - 1, 1)
    return {
        "sessions": count,
        "active_reported": active,
        "agent_processes": len(agents),
        "create_ms": {
            k: (v * 1e3 if isinstance(v, float) else v) for k, v in summary(latencies).items()
        },
        "rss_idle_mb": rss_idle * 1024 / 1e6,
        "rss_one_session_mb": rss_first * 1024 / 1e6,
        "rss_all_mb": rss_all * 1024 / 1e6,
        "rss_growth_per_session_mb": per_session * 1024 / 1e6,
        "agent_rss_each_mb": agent_rss / max(len(agents), 1) * 1024 / 1e6,
        "guard_processes": len(guards),
        "guard_rss_each_mb": guard_rss / max(len(guards), 1) * 1024 / 1e6,
        "idle_cpu_percent": (cpu1 - cpu0) / (t1 - t0) * 100,
        "agents_idle_cpu_percent": (agent_cpu1 - agent_cpu0) / (t1 - t0) * 100,
        "stop_s": stop_s,
        "agents_left_after_stop": left,
    }


# -- the whole run ----------------------------------------------------------------------


def _commit() -> str | None:
    """The commit measured (``+changes`` when the tree differs from it), if git knows."""
    import subprocess

    from benchlib.procs import ROOT

    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            [
                "git",
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                "server",
                "store",
                "agent_bridge",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+changes" if dirty else head


def run_suite(sizes: Sizes, workdir: Path, log: Any = print) -> dict[str, Any]:
    loads: dict[str, float] = {}

    def phase(name: str) -> None:
        loads[name] = os.getloadavg()[0]
        log(name)

    ctx = Context(sizes, workdir, log=log)
    started = time.perf_counter()
    load_before = os.getloadavg()
    results: dict[str, Any] = {}
    try:
        phase("start-up (server and bare uvicorn)")
        results["startup"] = phase_startup(ctx)
        phase("limits (raw sqlite3, demo agent start)")
        results["limits"] = phase_limits(ctx)
        phase("ingest, latency, fan-out (server and bare relay)")
        server = Server.start(ctx.tracker, workdir / "main", env={"MAX_CONCURRENT_SESSIONS": "500"})
        results["startup"]["first_runs_s"].append(server.startup_seconds)
        results["startup"]["first_median_s"] = median(results["startup"]["first_runs_s"])
        bare = _Bare(ctx)
        try:
            repo_id = server.api("POST", "/api/repos", {"path": "bench"}, expect=201)["id"]
            results.update(phase_relay(ctx, server, bare, repo_id))
        finally:
            results["startup"]["stop_s"] = ctx.tracker.stop(server.process, timeout=60)
            ctx.tracker.stop(bare.process)
        phase(f"scale ({sizes.scale_sessions} sessions with live agents)")
        results["scale"] = phase_scale(ctx)
        phase("agent sandbox (start and memory, bubblewrap on and off)")
        results["sandbox"] = phase_sandbox(ctx.tracker, workdir, sizes.sandbox_runs)
        pg_url = os.environ.get("BENCH_PG_URL")
        if pg_url:
            from benchlib.pg import phase_pg

            phase("PostgreSQL: ingest and raw asyncpg")
            results["pg"] = phase_pg(ctx, pg_url, _flood)
    finally:
        ctx.tracker.stop_all()
        left = ctx.tracker.leftovers()
        if left:
            ctx.problems.append(f"processes left running (killed now): {left}")
    results["meta"] = {
        "sizes": asdict(sizes),
        "seconds": time.perf_counter() - started,
        "commit": _commit(),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "loadavg_1min_per_phase": loads,
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "time": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    results["problems"] = ctx.problems
    results["processes_left"] = left
    return results
