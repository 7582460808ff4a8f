"""Processes: start the real server, read ``/proc``, stop everything we started.

Every process the suite starts is registered in a ``Tracker``; ``Tracker.stop_all``
stops whatever is still running (SIGTERM, then SIGKILL to the process only, by pid) and
``Tracker.leftovers`` lists any tracked pid, or descendant seen while it ran, that is
still alive: the suite reports them and fails.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "ROOT",
    "Server",
    "Tracker",
    "cpu_seconds",
    "descendants",
    "free_port",
    "http_json",
    "rss_kib",
    "stop_process",
    "wait_http_ok",
]

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
CLK_TCK = os.sysconf("SC_CLK_TCK")
POLL = 0.005  # seconds between readiness polls of a process we do not control


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stat_fields(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def alive(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` so far (its own, not its children's)."""
    fields = _stat_fields(pid)
    if fields is None:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_kib(pid: int) -> int:
    """VmRSS of ``pid`` in KiB (0 when gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def is_guard(pid: int) -> bool:
    """An agent's guard (agent_bridge/wrapper.py): the wrapper that did not exec."""
    try:
        return b"agent_bridge/wrapper.py" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (children, grandchildren, ...)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None and fields[0] != "Z":
                parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def http_json(
    base: str, method: str, path: str, body: Any = None, timeout: float = 60
) -> tuple[int, Any]:
    """One HTTP request on a fresh loopback connection; (status, parsed JSON or None)."""
    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        raw = response.read()
        try:
            return response.status, json.loads(raw) if raw else None
        except ValueError:
            return response.status, raw.decode(errors="replace")
    finally:
        conn.close()


def wait_http_ok(base: str, path: str, process: subprocess.Popen[bytes], timeout: float) -> float:
    """Poll ``path`` until it answers 200; return perf_counter() at that moment."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode} before {path} answered")
        try:
            status, _ = http_json(base, "GET", path, timeout=2)
            if status == 200:
                return time.perf_counter()
        except OSError:
            pass
        time.sleep(POLL)
    raise RuntimeError(f"{path} did not answer within {timeout} s")


def stop_process(process: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """SIGTERM, then SIGKILL if it has not ended within ``timeout`` seconds."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


@dataclass
class Tracker:
    """Every process the suite started, and every descendant seen while they ran."""

    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    seen: set[int] = field(default_factory=set)

    def spawn(
        self,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        log: Path | None = None,
        stdout: Any = None,
        stdin: Any = subprocess.DEVNULL,
    ) -> subprocess.Popen[bytes]:
        full_env = {**os.environ, **(env or {})}
        full_env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(SCRIPTS), full_env.get("PYTHONPATH", "")) if p
        )
        handle = log.open("ab") if log is not None else None
        try:
            process = subprocess.Popen(
                argv,
                cwd=ROOT,
                env=full_env,
                stdin=stdin,
                stdout=stdout if stdout is not None else (handle or subprocess.DEVNULL),
                stderr=handle or subprocess.DEVNULL,
            )
        finally:
            if handle is not None:
                handle.close()
        self.processes.append(process)
        self.seen.add(process.pid)
        return process

    def note_descendants(self, pid: int) -> list[int]:
        found = descendants(pid)
        self.seen.update(found)
        return found

    def stop(self, process: subprocess.Popen[bytes], timeout: float = 30) -> float:
        """SIGTERM, wait (SIGKILL after ``timeout``); return seconds it took."""
        started = time.perf_counter()
        if process.poll() is None:
            self.note_descendants(process.pid)
            stop_process(process, timeout)
        return time.perf_counter() - started

    def stop_all(self) -> None:
        for process in self.processes:
            self.stop(process, timeout=15)

    def leftovers(self) -> list[int]:
        """Tracked pids still alive; killed (by pid) after being listed."""
        left = sorted(pid for pid in self.seen if alive(pid))
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return left


@dataclass
class Server:
    """A real ``agent-sessions serve`` process on a free loopback port."""

    process: subprocess.Popen[bytes]
    port: int
    startup_seconds: float

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    def start(
        cls,
        tracker: Tracker,
        workdir: Path,
        *,
        env: dict[str, str] | None = None,
        log_name: str = "server.log",
    ) -> Server:
        """Start on the SQLite file under ``workdir`` (new in a new directory; the one a
        server left there on a restart); time start → /readyz 200."""
        port = free_port()
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "workspace" / "bench").mkdir(parents=True, exist_ok=True)
        full_env = {
            "AGENT_WORKSPACE_ROOT": str(workdir / "workspace"),
            "DATABASE_URL": f"sqlite+aiosqlite:///{workdir / 'db.sqlite'}",
            "AUTO_REGISTER_REPOS": "false",
            "AGENT_STOP_GRACE": "2",
            "HOST": "127.0.0.1",
            "PORT": str(port),
            "LOG_LEVEL": "info",
            "LOG_FORMAT": "text",
            # explicit, so that a developer's .env cannot change what is measured
            "AGENT_COMMAND": f"{sys.executable} -m agent_bridge.demo_agent",
            "API_TOKEN": "",
            "AGENTS_FILE": "",
            "AGENT_SANDBOX": "off",  # its cost is measured on its own (benchlib.sandbox)
            **(env or {}),
        }
        started = time.perf_counter()
        process = tracker.spawn(
            [sys.executable, "-m", "server.cli", "serve"], env=full_env, log=workdir / log_name
        )
        try:
            ready = wait_http_ok(f"http://127.0.0.1:{port}", "/readyz", process, timeout=60)
        except RuntimeError:
            tracker.stop(process)
            raise
        return cls(process, port, ready - started)

    def api(self, method: str, path: str, body: Any = None, *, expect: int | None = None) -> Any:
        status, data = http_json(self.url, method, path, body)
        if expect is not None and status != expect:
            raise RuntimeError(f"{method} {path} -> {status}: {data}")
        return data

    def metrics_text(self) -> str:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request("GET", "/metrics")
            return conn.getresponse().read().decode()
        finally:
            conn.close()
