"""The agent process: its own process group, an allow-listed environment, death with
the server, and the escalating stop."""

from __future__ import annotations

import asyncio
import ctypes
import logging
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import anyio

__all__ = [
    "OWNER_ENV",
    "AgentProcess",
    "ProcessSpec",
    "agent_environment",
    "become_subreaper",
    "group_members",
    "reap_group_once",
    "wait_group_gone",
    "kill_orphans",
]

log = logging.getLogger("agent_sessions.process")

OWNER_ENV = "AGENT_SESSIONS_OWNER"
BASE_ENV_ALLOWLIST = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "TMPDIR", "USER")
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
GROUP_REAP_TIMEOUT = 2.0
# Children whose exit asyncio waits for; the orphan reaper leaves them alone.
_TRACKED: set[int] = set()


def become_subreaper() -> bool:
    """Adopt the orphans of our agents (grandchildren) so their zombies can be reaped
    here, whatever PID 1 does. Linux only; False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return False


def group_members(pgid: int) -> list[tuple[int, str, int]]:
    """(pid, state, ppid) of every process whose process group is ``pgid``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:
            members.append((int(entry.name), fields[0], int(fields[1])))
    return members


def reap_group_once(pgid: int, *, keep: int | None = None) -> bool:
    """SIGKILL what is alive in group ``pgid`` and reap its zombies that are ours
    (orphans adopted as a subreaper); children asyncio waits for (our agents, ``keep``)
    are left to it. True when nothing of the group is left but ``keep``'s zombie."""
    me = os.getpid()
    left = False
    for pid, state, ppid in group_members(pgid):
        if state != "Z":
            left = True
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        elif ppid == me and pid != keep:
            left = True
            if pid not in _TRACKED:
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
    return not left


async def wait_group_gone(
    pgid: int,
    timeout: float,  # noqa: ASYNC109 - the deadline is the caller's, per group
    *,
    keep: int | None = None,
) -> bool:
    """Kill and reap group ``pgid`` until nothing of it is left, for at most ``timeout``
    seconds; False (and a warning) if something outlived that."""
    with anyio.move_on_after(timeout):
        # /proc has no event to wait on: poll it.
        while not await anyio.to_thread.run_sync(lambda: reap_group_once(pgid, keep=keep)):  # noqa: ASYNC110
            await anyio.sleep(0.01)
        return True
    log.warning("processes of a stopped group outlived the stop", extra={"pgid": pgid})
    return False


def agent_environment(
    source: Mapping[str, str], extra: Mapping[str, str], owner: str
) -> dict[str, str]:
    """The environment an agent gets: the allow-list from ``source``, then ``extra``
    (what the agent's configuration names), then the owner marker."""
    env = {key: source[key] for key in BASE_ENV_ALLOWLIST if key in source}
    env.update(extra)
    env[OWNER_ENV] = owner
    return env


def _die_with_parent() -> None:  # runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class ProcessSpec:
    argv: list[str]
    cwd: Path
    env: dict[str, str] = field(default_factory=dict)


class AgentProcess:
    """A spawned agent in its own process group."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc
        self.pid = proc.pid
        self.stdin = proc.stdin
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    @classmethod
    async def spawn(cls, spec: ProcessSpec) -> AgentProcess:
        proc = await asyncio.create_subprocess_exec(
            *spec.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(spec.cwd),
            env=spec.env,
            start_new_session=True,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - no threads spawn agents concurrently
        )
        _TRACKED.add(proc.pid)
        log.info("agent process started", extra={"event": "agent_spawned", "pid": proc.pid})
        return cls(proc)

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    async def wait(self) -> int:
        code = await self._proc.wait()
        _TRACKED.discard(self.pid)
        return code

    def close_stdin(self) -> None:
        if self.stdin is not None and not self.stdin.is_closing():
            self.stdin.close()

    def signal_group(self, signum: int) -> bool:
        """Signal the whole process group; False when it is already empty."""
        try:
            os.killpg(self.pid, signum)
        except ProcessLookupError:
            return False
        except PermissionError:  # pragma: no cover - pid reused by someone else's group
            return False
        return True

    async def _wait_for(self, seconds: float) -> bool:
        with anyio.move_on_after(seconds) as scope:
            await self.wait()
        return not scope.cancelled_caught

    async def stop(self, grace: float, polite: Callable[[], Awaitable[None]] | None = None) -> int:
        """Stop by escalation: polite → close stdin → SIGTERM → SIGKILL, each to the
        group and ``grace`` seconds apart. Shielded: it always finishes, and always waits."""
        with anyio.CancelScope(shield=True):
            if polite is not None and self.returncode is None:
                with anyio.move_on_after(grace):
                    await polite()
            self.close_stdin()
            if not await self._wait_for(grace):
                log.info("agent ignored stdin EOF; SIGTERM", extra={"pid": self.pid})
                self.signal_group(signal.SIGTERM)
                if not await self._wait_for(grace):
                    log.warning("agent ignored SIGTERM; SIGKILL", extra={"pid": self.pid})
                    self.signal_group(signal.SIGKILL)
                    await self.wait()
            await self.wait()
            # The leader is gone; whatever it left in its group goes too, and is reaped.
            self.signal_group(signal.SIGKILL)
            await self.reap_group()
        return self._proc.returncode if self._proc.returncode is not None else -1

    async def reap_group(self, timeout: float = GROUP_REAP_TIMEOUT) -> bool:  # noqa: ASYNC109 - a bound, not a cancel
        """Wait (bounded) until no process of the group is left; True if none is."""
        return await wait_group_gone(self.pid, timeout)


def kill_orphans(owner_prefix: str, alive_owner: str) -> list[int]:
    """Kill every process whose environment carries our owner marker with
    ``owner_prefix`` but is not ``alive_owner``: agents (and their children) left by an
    earlier server on the same database that died without stopping them."""
    killed: list[int] = []
    marker_prefix = f"{OWNER_ENV}={owner_prefix}".encode()
    alive = f"{OWNER_ENV}={alive_owner}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for item in environ:
            if item.startswith(marker_prefix) and item != alive:
                try:
                    os.kill(int(entry.name), signal.SIGKILL)
                    killed.append(int(entry.name))
                except OSError:
                    pass
                break
    if killed:
        log.warning(
            "killed orphan agent processes", extra={"event": "orphans_killed", "pids": killed}
        )
    return killed
