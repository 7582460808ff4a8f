"""``python -m benchlib.ab REV [REV ...]``: latency at a paced rate, A/B between revisions.

Each revision (a git revision, or ``.`` for the working tree) is exported with
``git archive`` to a temporary directory and served from there (``python -m server.cli
serve`` with that tree first on ``sys.path``; the venv's packages are shared). Rounds are
interleaved (A, B, C, A, B, C, ...) so that a machine whose load changes treats every
revision alike; each round is a fresh server and database, one session, and the bench's
own paced flood to one viewer (``benchlib.viewers``). Prints, per revision and round, the
latency p50/p99 (agent write -> viewer receive) and the server's CPU per update; the
CPU is the figure that still compares on a busy machine, p99 needs a quiet one.

``--startup``: instead of a flood, each round starts every revision's server on one
database at head (migrated by a first start, not counted) and the bare stack of
``benchlib.bare`` on it, in an order that turns each round, and prints the seconds and
CPU seconds from spawn to ``/readyz`` 200, and each revision's ratio to the stack (the
start-up target's reading; the exported trees are byte-compiled first, as an installed
server is).

``--startup --instructions``: the same processes, each once under valgrind's callgrind
(``PYTHONHASHSEED=0``), counting the instructions every thread of the process executed
from spawn to ``/readyz`` 200 (``callgrind_control --dump`` at that moment): a figure this
machine's drifting speed does not move (within 0.1 %), for CPU work only; the start's
waits (a thread parsing the SQLite schema while the event loop builds, the sandbox probe's
child) are not in it, and its threads' work is, so its ratio reads higher than the
seconds' ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib.procs import (
    ROOT,
    SCRIPTS,
    cpu_seconds,
    free_port,
    http_json,
    stop_process,
    wait_http_ok,
)
from benchlib.stats import median, summary
from benchlib.suite import flood_rate

__all__ = ["main"]


def export(rev: str, into: Path) -> Path:
    if rev == ".":
        return ROOT
    tree = into / rev.replace("/", "_")
    tree.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", rev], cwd=ROOT, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def server_env(tree: Path, workdir: Path, database: Path, port: int) -> dict[str, str]:
    """The environment a revision's server runs with (from ``tree``, on ``database``)."""
    return {
        **os.environ,
        "PYTHONPATH": str(tree),
        "AGENT_WORKSPACE_ROOT": str(workdir / "ws"),
        "DATABASE_URL": f"sqlite+aiosqlite:///{database}",
        "AUTO_REGISTER_REPOS": "false",
        "AGENT_STOP_GRACE": "2",
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "LOG_LEVEL": "warning",
        "AGENT_COMMAND": f"{sys.executable} -m agent_bridge.demo_agent",
        "API_TOKEN": "",
        "AGENTS_FILE": "",
        # the hot path only, as revisions before the sandbox ran it; and a sandboxed agent
        # gets no PYTHONPATH, so it would not find an exported tree's demo agent
        "AGENT_SANDBOX": "off",
    }


def one_round(
    tree: Path, workdir: Path, rate: int, count: int, kind: str = "text"
) -> dict[str, Any]:
    (workdir / "ws" / "bench").mkdir(parents=True)
    port = free_port()
    env = server_env(tree, workdir, workdir / "db.sqlite", port)
    with (workdir / "server.log").open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "serve"],
            cwd=tree,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_http_ok(base, "/readyz", server, 60)
        _, repo = http_json(base, "POST", "/api/repos", {"path": "bench"})
        _, session = http_json(base, "POST", "/api/sessions", {"repoId": repo["id"]})
        if "id" not in session:
            raise SystemExit(f"{tree}: could not create a session: {session}")
        job = {
            "url": f"ws://127.0.0.1:{port}/ws/sessions/{session['id']}",
            "viewers": 1,
            "expect": count,
            "prompt": f"flood {count} {kind}" + (f" rate={rate}" if rate else ""),
            "timeout": 120,
            "latency": True,
        }
        cpu0 = cpu_seconds(server.pid)
        out = subprocess.run(
            [sys.executable, "-m", "benchlib.viewers", json.dumps(job)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(SCRIPTS)},
            timeout=200,
            check=True,
        )
        cpu = cpu_seconds(server.pid) - cpu0
    finally:
        stop_process(server)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    latency = summary(result["latencies"])
    return {
        "p50_ms": (latency["p50"] or 0) * 1e3,
        "p99_ms": (latency["p99"] or 0) * 1e3,
        "max_ms": (latency["max"] or 0) * 1e3,
        "cpu_us_per_update": cpu / count * 1e6,
        "updates_per_s": flood_rate(result, count) or 0.0,
        "complete": result["complete"] == 1 and not result["gaps"],
        "load": os.getloadavg()[0],
    }


def start_command(
    tree: Path | None, workdir: Path, database: Path, port: int
) -> tuple[list[str], dict[str, str], Path]:
    """(argv, environment, working directory) of the server of ``tree`` on ``database``,
    or of the bare stack (``tree`` None)."""
    if tree is None:
        argv = [sys.executable, "-m", "benchlib.bare", "stack", str(port), str(database)]
        return argv, {**os.environ, "PYTHONPATH": str(SCRIPTS)}, ROOT
    argv = [sys.executable, "-m", "server.cli", "serve"]
    # python -m puts the working directory first on sys.path
    return argv, server_env(tree, workdir, database, port), tree


def migrated(trees: dict[str, Path], directory: Path) -> dict[str | None, Path]:
    """A database in ``directory`` per revision, brought to its head by a first start (not
    counted): revisions may be migrations apart. The bare stack (None) opens the last's."""
    (directory / "ws").mkdir(parents=True)
    databases: dict[str | None, Path] = {}
    for n, (kind, tree) in enumerate(trees.items()):
        databases[kind] = databases[None] = directory / f"db-{n}.sqlite"
        start_once(tree, directory, databases[kind])
    return databases


def start_once(tree: Path | None, workdir: Path, database: Path) -> tuple[float, float]:
    """(seconds, CPU seconds) from spawn to ``/readyz`` 200: the server of ``tree`` on
    ``database``, or the bare stack (``tree`` None)."""
    port = free_port()
    argv, env, cwd = start_command(tree, workdir, database, port)
    started = time.perf_counter()
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        ready = wait_http_ok(f"http://127.0.0.1:{port}", "/readyz", process, 60)
        return ready - started, cpu_seconds(process.pid)
    finally:
        stop_process(process)


def startup(trees: dict[str, Path], workdir: Path, rounds: int) -> None:
    kinds: list[str | None] = [None, *trees]
    seconds: dict[str | None, list[float]] = {kind: [] for kind in kinds}
    cpu: dict[str | None, list[float]] = {kind: [] for kind in kinds}
    for n in range(rounds):
        directory = workdir / f"start-{n}"
        databases = migrated(trees, directory)
        for kind in kinds[n % len(kinds) :] + kinds[: n % len(kinds)]:
            tree = None if kind is None else trees[kind]
            took, used = start_once(tree, directory, databases[kind])
            seconds[kind].append(took)
            cpu[kind].append(used)
        print(
            f"round {n + 1}: " + "  ".join(f"{k or 'stack'} {seconds[k][-1]:.3f} s" for k in kinds),
            flush=True,
        )
    print(f"\nstart-up to /readyz, {rounds} rounds; medians (and of each round's ratio):")
    stack = seconds[None]
    for kind in kinds:
        runs = seconds[kind]
        line = f"{kind or 'bare stack':>12}: {median(runs):.3f} s  CPU {median(cpu[kind]):.3f} s"
        if kind is not None:
            ratios = [a / b for a, b in zip(runs, stack, strict=True)]
            line += (
                f"  ratio to the stack: {median(runs) / median(stack):.2f} (rounds' median"
                f" {median(ratios):.2f}, best against best {min(runs) / min(stack):.2f})"
            )
        print(line)


def instructions_once(tree: Path | None, workdir: Path, database: Path) -> int:
    """Instructions from spawn to ``/readyz`` 200 (all threads; children not traced)."""
    port = free_port()
    out = workdir / f"callgrind-{port}.out"
    argv, env, cwd = start_command(tree, workdir, database, port)
    prefix = f"--vgdb-prefix={workdir / 'vgdb'}"  # where callgrind_control finds the process
    valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", prefix, "-q"]
    process = subprocess.Popen(
        [*valgrind, *argv],
        cwd=cwd,
        env={**env, "PYTHONHASHSEED": "0"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_http_ok(f"http://127.0.0.1:{port}", "/readyz", process, 300)
        subprocess.run(
            ["callgrind_control", prefix, "--dump=ready", str(process.pid)],
            env=env,  # vgdb's files are named after $HOST and $USER: the process's own
            check=True,
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60  # the dump is written once the process runs again
        while time.monotonic() < deadline:
            for dump in workdir.glob(f"{out.name}.*"):
                text = dump.read_text()
                if "\ntotals:" in text:
                    return int(text.split("\nsummary:", 1)[1].split()[0])
            time.sleep(0.1)
        raise RuntimeError(f"no callgrind dump of {argv}")
    finally:
        stop_process(process)


def instructions(trees: dict[str, Path], workdir: Path) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (Debian: apt-get install valgrind)")
    directory = workdir / "instructions"
    databases = migrated(trees, directory)
    counted = {
        kind: instructions_once(tree, directory, databases[kind]) for kind, tree in trees.items()
    }
    stack = instructions_once(None, directory, databases[None])
    print(f"\ninstructions from spawn to /readyz (callgrind):\n{'bare stack':>12}: {stack:,}")
    for kind, count in counted.items():
        print(f"{kind:>12}: {count:,}  ratio to the stack: {count / stack:.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench-ab", description=__doc__)
    parser.add_argument("revs", nargs="+", help="git revisions; '.' is the working tree")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--rate", type=int, default=1000, help="updates per second (0: unpaced, a flood)"
    )
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--count", type=int, help="updates (default: rate × seconds)")
    parser.add_argument("--kind", choices=("text", "tool"), default="text")
    parser.add_argument(
        "--startup", action="store_true", help="time start-up against the bare stack instead"
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="with --startup: count instructions to /readyz under callgrind instead of timing",
    )
    args = parser.parse_args(argv)
    count = args.count or int(args.rate * args.seconds)
    workdir = Path(tempfile.mkdtemp(prefix="agent-sessions-ab-"))
    results: dict[str, list[dict[str, Any]]] = {rev: [] for rev in args.revs}
    try:
        trees = {rev: export(rev, workdir / "trees") for rev in args.revs}
        if args.startup:
            for tree in trees.values():
                subprocess.run(
                    [sys.executable, "-m", "compileall", "-q", "server", "store", "agent_bridge"],
                    cwd=tree,
                    check=True,
                    stdout=subprocess.DEVNULL,
                )
            if args.instructions:
                instructions(trees, workdir)
            else:
                startup(trees, workdir, args.rounds)
            return 0
        for n in range(args.rounds):
            for rev, tree in trees.items():
                figures = one_round(
                    tree, workdir / f"{n}-{rev.replace('/', '_')}", args.rate, count, args.kind
                )
                results[rev].append(figures)
                print(
                    f"round {n + 1} {rev:>12}: p50 {figures['p50_ms']:6.2f} ms  p99 "
                    f"{figures['p99_ms']:7.2f} ms  max {figures['max_ms']:7.1f} ms  "
                    f"server CPU {figures['cpu_us_per_update']:4.0f} us/update  "
                    f"{figures['updates_per_s']:8,.0f}/s  "
                    f"load {figures['load']:.1f}",
                    flush=True,
                )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    pace = f"{args.rate}/s" if args.rate else "unpaced"
    print(f"\n{count} {args.kind} updates, {pace}, {args.rounds} rounds; medians:")
    for rev, rounds in results.items():
        print(
            f"{rev:>12}: p50 {median([r['p50_ms'] for r in rounds]):6.2f} ms  p99 "
            f"{median([r['p99_ms'] for r in rounds]):7.2f} ms  server CPU "
            f"{median([r['cpu_us_per_update'] for r in rounds]):4.0f} us/update  "
            f"{median([r['updates_per_s'] for r in rounds]):8,.0f}/s"
            + ("" if all(r["complete"] for r in rounds) else "  (some rounds incomplete)")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
