"""The agent process: its own process group, an allow-listed environment, death with
the server, and the escalating stop."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

import anyio
import msgspec

from agent_bridge.limits import LimitCgroups, out_of_memory
from agent_bridge.orphans import OWNER_ENV, SESSION_ENV, _stat
from agent_bridge.sandbox import SandboxPolicy, bwrap_argv
from agent_bridge.spawn import resolve_command, wrapped
from agent_bridge.wrapper import join, kill_cgroup, remove_cgroup

__all__ = [
    "OWNER_ENV",
    "SESSION_ENV",
    "AgentProcess",
    "ProcessSpec",
    "agent_environment",
    "become_subreaper",
    "empty_cgroup",
    "group_members",
    "reap_group_once",
    "track",
    "tracked_children",
    "untrack",
    "wait_group_gone",
]

log = logging.getLogger("agent_sessions.process")

BASE_ENV_ALLOWLIST = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "TMPDIR", "USER")
_PR_SET_CHILD_SUBREAPER = 36
GROUP_REAP_TIMEOUT = 2.0
# Children whose exit asyncio waits for (agents, terminals); the reapers leave them alone.
_TRACKED: set[int] = set()


def track(pid: int) -> None:
    _TRACKED.add(pid)


def untrack(pid: int) -> None:
    _TRACKED.discard(pid)


def tracked_children() -> frozenset[int]:
    return frozenset(_TRACKED)


def become_subreaper() -> bool:
    """Adopt the orphans of our agents (grandchildren) so their zombies can be reaped
    here, whatever PID 1 does. Linux only; False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return False


def group_members(pgid: int) -> list[tuple[int, str, int]]:
    """(pid, state, ppid) of every process whose process group, or session, is ``pgid``
    (a leader started in a session of its own: every process of that session descends
    from it, the guard of an agent too, even one that left the group)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if pgid in (int(fields[2]), int(fields[3])):
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
            if pid in _TRACKED:
                left = True
                continue
            try:
                left = os.waitpid(pid, os.WNOHANG)[0] != pid or left
            except ChildProcessError:  # reaped meanwhile: gone
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


def empty_cgroup(cgroup: Path, timeout: float) -> bool:  # noqa: ASYNC109 - not async
    """Kill every process in ``cgroup``, reap those adopted by this server (a subreaper),
    remove it. True when it is gone."""
    killed = kill_cgroup(str(cgroup), timeout)
    me, deadline = os.getpid(), time.monotonic() + timeout
    for pid in killed:  # descendants of the agent: only ever adopted, never a child of ours
        while (stat := _stat(pid)) is not None and stat[1] == me and pid not in _TRACKED:
            if stat[0] == "Z" or time.monotonic() >= deadline:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
                break
            time.sleep(0.002)  # out of its cgroup, not yet a zombie: a moment
    return remove_cgroup(str(cgroup), timeout)


def agent_environment(
    source: Mapping[str, str], extra: Mapping[str, str], owner: str, session: str = ""
) -> dict[str, str]:
    """The environment an agent gets: the allow-list from ``source``, then ``extra``
    (what the agent's configuration names), then the owner and session markers."""
    env = {key: source[key] for key in BASE_ENV_ALLOWLIST if key in source}
    env.update(extra)
    env[OWNER_ENV] = owner
    env[SESSION_ENV] = session
    return env


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's stream protocol, plus the moment the process exits: asyncio's own
    ``wait()`` also waits for every pipe to close, which a detached descendant holding
    them can put off for ever."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=asyncio.streams._DEFAULT_LIMIT, loop=loop)  # type: ignore[attr-defined] # noqa: SLF001 - the limit create_subprocess_exec uses
        self.exited = asyncio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()


class ProcessSpec(msgspec.Struct):
    argv: list[str]
    cwd: Path
    env: dict[str, str] = msgspec.field(default_factory=dict)
    cgroup: Path | None = None  # the directory the agent's own cgroup is made in
    sandbox: SandboxPolicy | None = None  # the wall it runs in (None: none)
    limits: LimitCgroups | None = None  # its memory, pids and CPU limits (None: none)

    def command(self) -> list[str]:
        """What is executed: the agent's argv, inside its sandbox if it has one."""
        return self.argv if self.sandbox is None else bwrap_argv(self.sandbox, self.argv)


class AgentProcess:
    """A spawned agent in its own process group."""

    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        protocol: _Protocol,
        cgroup: Path | None = None,
        joined: asyncio.Future[bool] | None = None,
        limits: LimitCgroups | None = None,
    ) -> None:
        self._proc = proc
        self._protocol = protocol
        self.pid = proc.pid
        self.cgroup = None if cgroup is None else cgroup / str(proc.pid)
        self._joined = joined  # our move of the agent into its cgroup, done before cleanup
        self.limits = limits
        self.out_of_memory = False  # the OOM killer struck in its memory cgroup (once reaped)
        self.stdin = proc.stdin
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    @classmethod
    async def spawn(cls, spec: ProcessSpec) -> AgentProcess:
        """Start the agent in a session (and cgroup) of its own, through the exec wrapper
        that ties it and all it starts to this server's life (``agent_bridge.wrapper``);
        from the event loop's thread."""
        resolve_command(spec.argv, spec.env, str(spec.cwd))
        loop = asyncio.get_running_loop()
        cgroup = "" if spec.cgroup is None else str(spec.cgroup)
        transport, protocol = await loop.subprocess_exec(
            lambda: _Protocol(loop),
            *wrapped(
                spec.command(),
                cgroup=cgroup,
                guard=True,
                limits="" if spec.limits is None else spec.limits.spec(),
            ),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(spec.cwd),
            env=spec.env,
            start_new_session=True,
        )
        proc = asyncio.subprocess.Process(transport, protocol, loop)
        _TRACKED.add(proc.pid)
        log.info("agent process started", extra={"event": "agent_spawned", "pid": proc.pid})
        if spec.cgroup is None:
            return cls(proc, protocol, limits=spec.limits)
        # While the wrapper starts; it checks that it is in before its exec.
        joined = loop.run_in_executor(None, join, str(spec.cgroup / str(proc.pid)), proc.pid)
        return cls(proc, protocol, spec.cgroup, joined, spec.limits)

    async def exited(self) -> None:
        """Wait until the process itself has exited (its pipes may still be open)."""
        await self._protocol.exited.wait()

    def close_pipes(self) -> None:
        """Close our ends of stdin, stdout and stderr: readers see EOF, ``wait()`` no
        longer waits for a descendant that holds the other ends."""
        transport = self._proc._transport  # type: ignore[attr-defined] # noqa: SLF001 - asyncio keeps it private
        for fd in (0, 1, 2):
            pipe = transport.get_pipe_transport(fd)
            if pipe is not None:
                pipe.close()

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
        """Wait (bounded) until no process of the group (nor of the session: the guard,
        a descendant that changed group) is left, then none of the cgroup (a descendant
        that left the session), and remove the cgroup; True if nothing is left."""
        gone = await wait_group_gone(self.pid, timeout)
        if self._joined is not None:
            await asyncio.shield(self._joined)  # a late mkdir would leave the cgroup behind
        if self.cgroup is not None:
            gone = await anyio.to_thread.run_sync(empty_cgroup, self.cgroup, timeout) and gone
        if self.limits is not None:
            self.out_of_memory = out_of_memory(self.limits.memory_dir(self.pid))
            for directory in self.limits.agent_dirs(self.pid):
                await anyio.to_thread.run_sync(empty_cgroup, directory, timeout)
        return gone

    def terminal_limits(self) -> str:
        """What a terminal of this agent passes the wrapper: its limit cgroups."""
        return "" if self.limits is None else self.limits.terminal_spec(self.pid)
