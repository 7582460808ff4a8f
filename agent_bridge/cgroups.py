"""A cgroup per agent, where the system lets this server make one: every descendant of an
agent, however it detaches (``setsid``, a double fork), stays in its agent's cgroup, so
the agent's guard (``agent_bridge.wrapper``) and its stop kill all of them.

Layout: ``<hierarchy>/<this server's own cgroup>/agent-sessions/<owner>/<agent pid>``,
``<owner>`` naming this server process (a hash of database and node, pid, start time),
so that a node sweeping at start touches only what a dead process of its own left.

Hierarchies, in the order ``auto`` tries them (``AGENT_CGROUPS`` names one, or ``off``):
``v2`` (the unified hierarchy, mounted alone or beside v1; ``cgroup.kill`` on Linux
5.14+), ``freezer`` (v1: frozen before the kill, so nothing forks in between) and
``pids`` (v1: killed until empty). One that is not mounted, not writable or does not let
a process in is skipped; with none, agents run without a cgroup (one log line): their
process group dies with them, a detached descendant is killed by the orphan sweeps
(``agent_bridge.orphans``) and, after a crash, at the next start.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import logging
import os
import subprocess
import sys
from pathlib import Path

import anyio
from anyio.abc import TaskStatus

from agent_bridge.orphans import process_start_time
from agent_bridge.wrapper import kill_cgroup, remove_cgroup

__all__ = ["KINDS", "AgentCgroups", "hierarchies"]

log = logging.getLogger("agent_sessions.process")

KINDS = ("v2", "freezer", "pids")
TOP = "agent-sessions"
# A process that moves itself into the cgroup whose ``cgroup.procs`` is its argument: the
# shell (about 1 ms), or this interpreter where there is no /bin/sh (about 20 ms, on the
# start-up's path)
_JOINS = (
    ["/bin/sh", "-c", 'echo 0 > "$1"', "sh"],
    [sys.executable, "-I", "-S", "-c", "import sys; open(sys.argv[1], 'w').write('0')"],
)


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(kind, mount point, mount root, options) of every cgroup mount, from mountinfo."""
    found: list[tuple[str, str, str, set[str]]] = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        if tail[0] == "cgroup2":
            found.append(("v2", fields[4], fields[3], set()))
        elif tail[0] == "cgroup":
            found.append(("v1", fields[4], fields[3], set(tail[2].split(","))))
    return found


def _own_paths() -> dict[str, str]:
    """This process's cgroup per hierarchy: "v2" for the unified one, else controller."""
    paths: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers else ["v2"]:
                paths[name] = path
    return paths


def hierarchies() -> dict[str, Path]:
    """The directory of this process's own cgroup in each usable kind of hierarchy."""
    own = _own_paths()
    found: dict[str, Path] = {}
    for kind, point, root, options in _mounts():
        name = kind if kind == "v2" else next((k for k in KINDS if k in options), None)
        if name is None or name in found or name not in own:
            continue
        relative = os.path.relpath(own[name], root) if own[name].startswith(root) else None
        if relative is None or relative.startswith(".."):
            continue
        found[name] = Path(point, relative).resolve()
    return found


_instances = itertools.count()  # several servers in one process (tests) each get their own


def _owner_key(owner: str) -> tuple[str, str]:
    """(node key, directory name) of an owner marker ``<db>:<node>:<pid>:<start>``: the
    node key names database and node; then pid, start time and instance."""
    head, _, start = owner.rpartition(":")
    node, _, pid = head.rpartition(":")
    node_key = hashlib.sha1(node.encode()).hexdigest()[:12]  # noqa: S324 - a label
    return node_key, f"{node_key}-{pid}-{start}-{next(_instances)}"


def _empty(cgroup: Path) -> None:
    """Kill what is in ``cgroup`` and its sub-cgroups, and remove them all."""
    for child in sorted(cgroup.iterdir()) if cgroup.is_dir() else []:
        if child.is_dir():
            _empty(child)
    kill_cgroup(str(cgroup))
    remove_cgroup(str(cgroup))


def _joins(procs: Path) -> bool:
    """Whether a new process can move itself into the cgroup of ``procs``."""
    for join in _JOINS:
        try:
            done = subprocess.run(  # noqa: S603 - fixed code, our own path
                [*join, str(procs)], check=False, stderr=subprocess.DEVNULL
            )
        except FileNotFoundError:  # no such program here: the next
            continue
        return done.returncode == 0
    return False


class AgentCgroups:
    """This server's agent cgroups: ``base`` is the directory each agent's goes in, or
    None where no cgroup could be made."""

    def __init__(self, owner: str, mode: str = "auto") -> None:
        self.owner = owner
        self.mode = mode
        self.base: Path | None = None
        self.kind = ""
        self._node_key, self._name = _owner_key(owner)
        self._started: anyio.Event | None = None  # set once start() on its thread is done

    async def run_start(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """``start()`` on a worker thread, off the server's start-up path: the first cgroup
        a process joins costs the kernel ~20 ms here. From the moment this task is started,
        ``ready()`` waits for it."""
        self._started = anyio.Event()
        task_status.started()
        try:
            await anyio.to_thread.run_sync(self.start)
        finally:
            self._started.set()

    async def ready(self) -> Path | None:
        """``base``, once a ``run_start()`` under way is done."""
        if self._started is not None:
            await self._started.wait()
        return self.base

    @property
    def name(self) -> str:
        """This server process's directory name under ``agent-sessions`` (its owner)."""
        return self._name

    def start(self) -> Path | None:
        """At start: sweep what a dead server left, then make this one's directory."""
        self.sweep_stale()
        return self.prepare()

    def sweep_stale(self) -> list[Path]:
        """Kill and remove what a dead process of this node left in any hierarchy (the
        guard normally does; not when it was killed too). Returns the removed owners."""
        removed = []
        for top in (parent / TOP for parent in hierarchies().values()):
            for entry in sorted(top.iterdir()) if top.is_dir() else []:
                key, pid, start = ([*entry.name.split("-"), "", ""])[:3]
                if entry.name == self._name or not entry.is_dir():
                    continue
                if pid.isdigit() and process_start_time(int(pid)) == start:
                    continue  # its server lives
                if key == self._node_key:
                    _empty(entry)
                    removed.append(entry)
                else:  # another node's: only what is empty already
                    for child in [*entry.iterdir(), entry]:
                        with contextlib.suppress(OSError):
                            child.rmdir()
            with contextlib.suppress(OSError):
                top.rmdir()
        if removed:
            log.warning(
                "removed agent cgroups left by a dead server",
                extra={"event": "orphans_killed", "cgroups": [str(p) for p in removed]},
            )
        return removed

    def prepare(self) -> Path | None:
        """Make this server's directory in the first hierarchy that lets a process in;
        None (and one log line) where none does."""
        found = hierarchies()
        kinds = KINDS if self.mode == "auto" else (self.mode,) if self.mode in KINDS else ()
        for kind in kinds:
            if kind in found and self._try(found[kind] / TOP / self._name):
                self.kind = kind
                log.info(
                    "agents run in cgroups",
                    extra={"event": "agent_cgroups", "kind": kind, "path": str(self.base)},
                )
                return self.base
        log.warning(
            "no writable cgroup (AGENT_CGROUPS=%s): an agent's detached descendants are "
            "killed by the orphan sweeps, and after a crash only at the next start",
            self.mode,
            extra={"event": "agent_cgroups", "kind": "none"},
        )
        return None

    def _try(self, base: Path) -> bool:
        probe = base / "probe"
        try:
            probe.mkdir(parents=True, exist_ok=True)
            joined = _joins(probe / "cgroup.procs")
        except OSError:
            joined = False
        remove_cgroup(str(probe))
        if not joined:
            self._remove(base)
            return False
        self.base = base
        return True

    @staticmethod
    def _remove(base: Path) -> None:
        for directory in (base, base.parent):
            with contextlib.suppress(OSError):
                directory.rmdir()

    def release(self) -> None:
        """At shutdown, once every agent stopped: remove this server's directory."""
        if self.base is not None:
            _empty(self.base)
            with contextlib.suppress(OSError):
                self.base.parent.rmdir()  # the shared parent, when empty
