"""Processes agents leave behind, found by the markers in their environment.

Every agent and terminal gets two variables: ``AGENT_SESSIONS_OWNER`` (which server
process started it: ``<database hash>:<node id>:<pid>:<start time>``) and
``AGENT_SESSIONS_SESSION`` (for which session). Their descendants inherit both.

- ``OrphanSweeper``: the server is a child subreaper, so a descendant that calls
  ``setsid()`` or double-forks is re-parented to it when its parent dies. Every such
  adopted process of ours whose session is no longer live is an orphan of an ended
  session and is killed (its own children are adopted in turn and go in the next round).
  Run when a session ends and periodically.
- ``kill_orphans``: at start, what a *dead* server process of the same node left
  (after kill -9, where the parent-death signal took only the agents themselves). A live
  server of another node, or of this node, keeps its processes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import Callable, Collection
from pathlib import Path

import anyio

__all__ = [
    "OWNER_ENV",
    "SESSION_ENV",
    "OrphanSweeper",
    "kill_orphans",
    "owner_marker",
    "process_start_time",
]

log = logging.getLogger("agent_sessions.process")

OWNER_ENV = "AGENT_SESSIONS_OWNER"
SESSION_ENV = "AGENT_SESSIONS_SESSION"
SWEEP_TIMEOUT = 2.0
SWEEP_INTERVAL = 5.0  # seconds between sweeps; a session's end sweeps at once


def process_start_time(pid: int) -> str | None:
    """The start time of ``pid`` (clock ticks since boot, /proc/PID/stat field 22), or
    None when there is no such process: with the pid, it names one process for good."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def owner_marker(database_hash: str, node_id: str, pid: int | None = None) -> str:
    """The owner marker of server process ``pid`` (default: this one)."""
    pid = os.getpid() if pid is None else pid
    return f"{database_hash}:{node_id}:{pid}:{process_start_time(pid) or '0'}"


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, ppid) of ``pid``."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def _markers(pid: int) -> dict[str, str]:
    """Our two variables in the environment of ``pid`` (empty when unreadable)."""
    found: dict[str, str] = {}
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return found
    for item in environ.split(b"\0"):
        for name in (OWNER_ENV, SESSION_ENV):
            prefix = f"{name}=".encode()
            if item.startswith(prefix):
                found[name] = item[len(prefix) :].decode("utf-8", "replace")
    return found


def _parse(owner: str) -> tuple[str, str, int | None, str]:
    """(database hash, node id, pid, start time) of an owner marker; the node id may
    hold the separator."""
    database, _, rest = owner.partition(":")
    node, _, tail = rest.rpartition(":")
    node, _, pid = node.rpartition(":")
    return database, node, int(pid) if pid.isdigit() else None, tail


def _pids() -> list[int]:
    return [int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit()]


class OrphanSweeper:
    """Kills the adopted descendants of ended sessions (see the module's docstring)."""

    def __init__(self, owner: str, tracked: Callable[[], Collection[int]]) -> None:
        self.owner = owner
        self._tracked = tracked  # our own children, waited for by asyncio: never touched
        self._adopted: set[int] = set()  # seen re-parented to us: ours to reap

    def sweep_once(self, live_sessions: Callable[[], Collection[str]]) -> list[int]:
        """One pass: kill the adopted processes of ours whose session is not live, reap
        the adopted ones that are dead. Returns the pids killed (or killed again: still
        dying). A pass that kills nothing means every killed one is dead, and so its
        children were adopted before this pass looked.

        ``live_sessions`` and the tracked children are asked only once /proc was read: a
        session is live before its agent is forked, so an agent that starts while the
        pass runs (its pid not tracked yet) is never taken for an orphan."""
        me = os.getpid()
        zombies: list[int] = []
        ours: list[tuple[int, str | None]] = []
        for pid in _pids():
            info = _stat(pid)
            if info is None or info[1] != me:
                continue
            if info[0] == "Z":
                zombies.append(pid)
                continue
            markers = _markers(pid)
            if markers.get(OWNER_ENV) == self.owner:
                ours.append((pid, markers.get(SESSION_ENV)))
        tracked = set(self._tracked())
        live = set(live_sessions())
        for pid in zombies:
            if pid in self._adopted and pid not in tracked:  # never someone else's to reap
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
                self._adopted.discard(pid)
        killed: list[int] = []
        for pid, session in ours:
            if pid in tracked:
                continue
            self._adopted.add(pid)
            if session in live:
                continue
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        return killed

    async def sweep(self, live_sessions: Callable[[], Collection[str]]) -> list[int]:
        """Sweep until a pass finds nothing (the children of a killed orphan are adopted
        only once it is dead), for at most SWEEP_TIMEOUT seconds. ``live_sessions`` is
        asked on a worker thread, once a pass has read /proc (see ``sweep_once``)."""
        killed: list[int] = []
        with anyio.move_on_after(SWEEP_TIMEOUT):
            while True:
                now = await anyio.to_thread.run_sync(self.sweep_once, live_sessions)
                killed += [pid for pid in now if pid not in killed]
                if not now:
                    break
                await anyio.sleep(0.01)  # /proc has no event to wait on
        if killed:
            log.warning(
                "killed processes left by ended sessions",
                extra={"event": "orphans_killed", "pids": killed},
            )
        return killed

    async def run(self, live_sessions: Callable[[], Collection[str]]) -> None:
        """Sweep every SWEEP_INTERVAL seconds, for ever: what a session's own end did not
        catch (a process adopted after it) goes at the latest here."""
        while True:
            await anyio.sleep(SWEEP_INTERVAL)
            try:
                await self.sweep(live_sessions)
            except Exception:
                log.exception("orphan sweep failed")


def kill_orphans(alive_owner: str) -> list[int]:
    """Kill every process marked by a dead server process of the same node and database
    as ``alive_owner`` (this server's marker): its owner pid is gone, or is another
    process now (its start time differs). Other nodes' processes, and those of a live
    server, are left."""
    database_hash, node_id = _parse(alive_owner)[:2]
    killed: list[int] = []
    me = os.getpid()
    for pid in _pids():
        if pid == me:
            continue
        owner = _markers(pid).get(OWNER_ENV)
        if owner is None or owner == alive_owner:
            continue
        database, node, owner_pid, started = _parse(owner)
        if database != database_hash or node != node_id:
            continue
        if owner_pid is not None and process_start_time(owner_pid) == started:
            continue  # its server lives
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    if killed:
        log.warning(
            "killed orphan agent processes", extra={"event": "orphans_killed", "pids": killed}
        )
    return killed
