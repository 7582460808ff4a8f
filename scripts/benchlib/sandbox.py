"""The cost of the agent sandbox: what bubblewrap adds to an agent's start and the memory
each sandboxed agent costs. Two servers, ``AGENT_SANDBOX=off`` and ``on`` (network
``none``), create sessions of the demo agent alternately (each create waits for the
agent's initialize and session/new); the difference of the medians is the start cost.
Memory: the RSS of the sandbox's own processes (bubblewrap's parent and its init in the
PID namespace) below each sandboxed agent's wrapper, and the agent's own RSS either way.
On a loaded machine the session creates vary by more than the sandbox costs, so the
start cost is also taken directly: ``/bin/true`` run alone and inside the wall built for
the demo agent, per network (under ``proxy`` the forwarder starts first), interleaved.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from agent_bridge.sandbox import SandboxPolicy, bwrap_argv, installation_roots
from benchlib.procs import Server, Tracker, is_guard, rss_kib
from benchlib.stats import median

__all__ = ["phase_sandbox"]


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _agent_memory(tracker: Tracker, server: Server) -> tuple[int, int]:
    """(KiB of bubblewrap's processes, KiB of the rest: the agents) below ``server``."""
    below = tracker.note_descendants(server.pid)
    walls = [p for p in below if _comm(p) == "bwrap"]
    agents = [p for p in below if p not in walls and not is_guard(p)]
    return sum(rss_kib(p) for p in walls), sum(rss_kib(p) for p in agents)


def _timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)  # noqa: S603 - ours
    return time.perf_counter() - started


def wall_cost_ms(workdir: Path, runs: int, bwrap: str) -> dict[str, float]:
    """Median ms bubblewrap adds to starting a program, per network."""
    workspace, home = workdir / "wall-ws", workdir / "wall-home"
    workspace.mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    demo = [sys.executable, "-m", "agent_bridge.demo_agent"]
    read = tuple(installation_roots(demo, {"PATH": "/usr/bin:/bin"}))
    listener = socket.socket(socket.AF_UNIX)
    path = workdir / "egress.sock"
    listener.bind(str(path))
    listener.listen()
    added: dict[str, float] = {}
    try:
        for network in ("open", "none", "proxy"):
            policy = SandboxPolicy(
                workspace,
                home,
                read=read,
                network=network,  # type: ignore[arg-type]
                proxy_socket=path,
                bwrap=bwrap,
            )
            plain, walled = [], []
            for _ in range(runs):
                plain.append(_timed(["/bin/true"]))
                walled.append(_timed(bwrap_argv(policy, ["/bin/true"])))
            added[network] = (median(walled) - median(plain)) * 1e3
    finally:
        listener.close()
    return added


def phase_sandbox(tracker: Tracker, workdir: Path, runs: int) -> dict[str, Any]:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return {"skipped": "bubblewrap is not installed"}
    direct = wall_cost_ms(workdir, max(runs * 3, 5), bwrap)
    modes = {
        "off": {"AGENT_SANDBOX": "off"},
        "on": {"AGENT_SANDBOX": "on", "AGENT_NETWORK": "none"},
    }
    servers = {
        mode: Server.start(
            tracker, workdir / f"sandbox-{mode}", env={**env, "MAX_CONCURRENT_SESSIONS": "50"}
        )
        for mode, env in modes.items()
    }
    starts: dict[str, list[float]] = {mode: [] for mode in modes}
    memory: dict[str, tuple[int, int]] = {}
    try:
        repos = {
            mode: server.api("POST", "/api/repos", {"path": "bench"}, expect=201)["id"]
            for mode, server in servers.items()
        }
        for n in range(runs + 1):  # the first of each warms the caches: not counted
            for mode, server in servers.items():
                started = time.perf_counter()
                created = server.api("POST", "/api/sessions", {"repoId": repos[mode]}, expect=201)
                took = time.perf_counter() - started
                if n:
                    starts[mode].append(took)
                if n == runs:  # the last one stays alive while its memory is read
                    memory[mode] = _agent_memory(tracker, server)
                server.api("POST", f"/api/sessions/{created['id']}/complete", expect=200)
    finally:
        for server in servers.values():
            tracker.stop(server.process, timeout=60)
    off, on = median(starts["off"]), median(starts["on"])
    return {
        "runs": runs,
        "start_off_ms": [t * 1e3 for t in starts["off"]],
        "start_on_ms": [t * 1e3 for t in starts["on"]],
        "start_off_median_ms": off * 1e3,
        "start_on_median_ms": on * 1e3,
        "start_added_ms": (on - off) * 1e3,
        "wall_added_ms": direct,
        "sandbox_rss_mb": memory["on"][0] * 1024 / 1e6,
        "agent_rss_on_mb": memory["on"][1] * 1024 / 1e6,
        "agent_rss_off_mb": memory["off"][1] * 1024 / 1e6,
    }
