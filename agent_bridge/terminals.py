"""ACP terminals: commands an agent runs through the client (``terminal/*``).

One ``TerminalHost`` per session. ``terminal/create`` starts the command with its working
directory confined to the session's ``Workspace`` and returns at once; the output is
collected as it arrives (asyncio protocol callbacks, no background task), keeping the last
``outputByteLimit`` bytes, cut at a UTF-8 character boundary. ``output``,
``wait_for_exit``, ``kill`` and ``release`` work on the id. Each command runs in its own
process group (a new session), dies with the server (parent-death signal) and is in its
agent's cgroup if any (``cgroup``): the agent's guard and stop kill all it starts, however
it detaches. ``close()`` kills every group and reaps what is left when the session stops or
its agent exits. A session may hold at most ``max_terminals`` unreleased terminals.

The working directory is opened once, checked by its real path (``/proc/self/fd``), and
entered with ``fchdir`` in the child (by the exec wrapper of ``agent_bridge.spawn``), so
a directory swapped for a symlink between the check and the start is never followed.
Without a sandbox this confines only where a command *starts*: the command runs with the
server's user rights, like the agent. With one (``sandbox``, its agent's policy) each
command runs in a bubblewrap wall of its own built the same way (``agent_bridge.sandbox``).
POSIX (Linux), asyncio only.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import signal
import stat
import subprocess
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Final

import anyio

from agent_bridge import acp_types as acp
from agent_bridge import jsonrpc
from agent_bridge.errors import RpcError
from agent_bridge.jsontypes import JsonObject, JsonValue
from agent_bridge.process import OWNER_ENV, SESSION_ENV, track, untrack, wait_group_gone
from agent_bridge.sandbox import SandboxPolicy, bwrap_argv
from agent_bridge.spawn import resolve_command, wrapped
from agent_bridge.terminal_output import OutputBuffer
from agent_bridge.workspace import PathOutsideWorkspace, Workspace, WorkspaceError

__all__ = [
    "DEFAULT_OUTPUT_BYTES",
    "MAX_OUTPUT_BYTES",
    "TERMINAL_LIMIT_REACHED",
    "OutputBuffer",
    "TerminalHost",
]

log = logging.getLogger("agent_sessions.terminals")
security_log = logging.getLogger("agent_sessions.security")

DEFAULT_OUTPUT_BYTES: Final = 1024 * 1024
MAX_OUTPUT_BYTES: Final = 4 * 1024 * 1024  # per terminal; at most 16 terminals per session
DEFAULT_MAX_TERMINALS: Final = 16
TERMINAL_LIMIT_REACHED: Final = -32001  # implementation-defined; ACP uses -32000 and -32002
RESOURCE_NOT_FOUND: Final = -32002
OUTPUT_EOF_WAIT: Final = 1.0
REAP_TIMEOUT: Final = 2.0
_DIR_FLAGS: Final = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC


class _Protocol(asyncio.SubprocessProtocol):
    def __init__(self, buffer: OutputBuffer) -> None:
        self.buffer = buffer
        self.exited = asyncio.Event()
        self.output_closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.buffer.append(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self.output_closed.set()

    def process_exited(self) -> None:
        self.exited.set()


class _Terminal:
    def __init__(
        self, terminal_id: str, transport: asyncio.SubprocessTransport, protocol: _Protocol
    ) -> None:
        self.id = terminal_id
        self.transport = transport
        self.protocol = protocol
        self.pid = transport.get_pid()
        self.group_gone = False  # after that, never signal the (maybe reused) group id

    @property
    def returncode(self) -> int | None:
        return self.transport.get_returncode() if self.protocol.exited.is_set() else None

    def exit_status(self) -> acp.TerminalExitStatus | None:
        code = self.returncode
        if code is None:
            return None
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = str(-code)
            return {"exitCode": None, "signal": name}
        return {"exitCode": code, "signal": None}

    def signal_group(self, signum: int) -> None:
        if self.group_gone:
            return
        try:
            os.killpg(self.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    async def wait_exit(self) -> acp.TerminalExitStatus:
        await self.protocol.exited.wait()
        with anyio.move_on_after(OUTPUT_EOF_WAIT):  # let the last output arrive
            await self.protocol.output_closed.wait()
        status = self.exit_status()
        assert status is not None
        return status

    def output(self) -> acp.TerminalOutputResult:
        buffer = self.protocol.buffer
        result: acp.TerminalOutputResult = {
            "output": buffer.text(final=self.protocol.output_closed.is_set()),
            "truncated": buffer.truncated,
        }
        status = self.exit_status()
        if status is not None:
            result["exitStatus"] = status
        return result

    async def destroy(self) -> None:
        """Kill the group, wait for the command, reap the group, close the pipes."""
        self.signal_group(signal.SIGKILL)
        with anyio.move_on_after(REAP_TIMEOUT):
            await self.protocol.exited.wait()
        self.transport.close()
        if self.protocol.exited.is_set():
            untrack(self.pid)
        # The leader is asyncio's to reap; the rest of the group is ours.
        self.group_gone = await wait_group_gone(self.pid, REAP_TIMEOUT, keep=self.pid)


class TerminalHost:
    """The ``terminal/*`` methods of one session (the AcpClient's ``TerminalHost``)."""

    def __init__(
        self,
        workspace: Workspace,
        *,
        base_env: Mapping[str, str],
        max_terminals: int = DEFAULT_MAX_TERMINALS,
        default_output_bytes: int = DEFAULT_OUTPUT_BYTES,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
        context: Mapping[str, str] | None = None,
    ) -> None:
        self._workspace = workspace
        self._base_env = dict(base_env)
        self._max_terminals = max_terminals
        self._default_output = min(default_output_bytes, max_output_bytes)
        self._max_output = max_output_bytes
        self._context = dict(context or {})
        self._terminals: dict[str, _Terminal] = {}
        self._ids = itertools.count(1)
        self._closed = False
        self.cgroup: Path | None = None  # its agent's cgroup, once the agent runs
        self.sandbox: SandboxPolicy | None = None  # its agent's wall: each command gets one
        self.limits = ""  # its agent's limit cgroups (agent_bridge.limits), for the wrapper

    @property
    def open_count(self) -> int:
        return len(self._terminals)

    def pids(self) -> list[int]:
        """The process (and group) ids of the unreleased terminals."""
        return [t.pid for t in self._terminals.values()]

    async def handle(self, method: str, params: JsonObject) -> acp.TerminalResult:
        handlers: dict[str, Callable[[JsonObject], Awaitable[acp.TerminalResult]]] = {
            "terminal/create": self.create,
            "terminal/output": self.output,
            "terminal/wait_for_exit": self.wait_for_exit,
            "terminal/kill": self.kill,
            "terminal/release": self.release,
        }
        handler = handlers.get(method)
        if handler is None:
            raise RpcError(jsonrpc.METHOD_NOT_FOUND, "Method not found")
        return await handler(params)

    # -- the methods -------------------------------------------------------------------

    async def create(self, params: JsonObject) -> acp.CreateTerminalResult:
        if self._closed:
            raise RpcError(jsonrpc.INVALID_REQUEST, "The session is stopping.")
        if len(self._terminals) >= self._max_terminals:
            raise RpcError(
                TERMINAL_LIMIT_REACHED,
                f"This session already has {self._max_terminals} terminals; release one first.",
            )
        argv = _argv(params)
        env = self._env(params.get("env"))
        limit = self._output_limit(params.get("outputByteLimit"))
        cwd_fd = self._open_cwd(params.get("cwd"))
        try:
            loop = asyncio.get_running_loop()
            buffer = OutputBuffer(limit)
            try:
                resolve_command(argv, env, cwd_fd)
                command = argv
                if self.sandbox is not None:  # a wall of its own, as its agent's
                    cwd = Path(os.readlink(f"/proc/self/fd/{cwd_fd}"))
                    command = bwrap_argv(self.sandbox, argv, cwd=cwd)
                # No preexec_fn: the exec wrapper sets the parent-death signal, joins the
                # cgroup, enters the directory by its descriptor (agent_bridge.spawn).
                cgroup = "" if self.cgroup is None else str(self.cgroup)
                transport, protocol = await loop.subprocess_exec(
                    lambda: _Protocol(buffer),
                    *wrapped(
                        command,
                        cwd_fd=cwd_fd,
                        cgroup=cgroup,
                        own_cgroup=False,
                        limits=self.limits,
                    ),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                    pass_fds=(cwd_fd,),
                )
            except (OSError, subprocess.SubprocessError):
                raise RpcError(
                    jsonrpc.INVALID_PARAMS, f"The command {argv[0]!r} could not be started."
                ) from None
        finally:
            os.close(cwd_fd)
        terminal = _Terminal(f"term_{next(self._ids)}", transport, protocol)
        track(terminal.pid)  # asyncio reaps it; the orphan sweep must not
        self._terminals[terminal.id] = terminal
        log.info(
            "terminal started",
            extra={
                "event": "terminal_started",
                "terminal_id": terminal.id,
                "pid": terminal.pid,
                **self._context,
            },
        )
        return {"terminalId": terminal.id}

    async def output(self, params: JsonObject) -> acp.TerminalOutputResult:
        return self._get(params).output()

    async def wait_for_exit(self, params: JsonObject) -> acp.TerminalExitStatus:
        return await self._get(params).wait_exit()

    async def kill(self, params: JsonObject) -> acp.EmptyResult:
        """Kill the command's process group; the id stays valid (output still readable)."""
        terminal = self._get(params)
        terminal.signal_group(signal.SIGKILL)
        return {}

    async def release(self, params: JsonObject) -> acp.EmptyResult:
        """Kill the command if it is still running and forget the id."""
        terminal = self._get(params)
        del self._terminals[terminal.id]
        with anyio.CancelScope(shield=True):
            await terminal.destroy()
        return {}

    async def close(self) -> None:
        """Refuse new terminals, kill and reap every one (session stop, agent exit)."""
        self._closed = True
        terminals, self._terminals = list(self._terminals.values()), {}
        if not terminals:
            return
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for terminal in terminals:
                    tg.start_soon(terminal.destroy)
        log.info(
            "terminals closed",
            extra={"event": "terminals_closed", "count": len(terminals), **self._context},
        )

    # -- parameters --------------------------------------------------------------------

    def _get(self, params: JsonObject) -> _Terminal:
        terminal_id = params.get("terminalId")
        terminal = self._terminals.get(terminal_id) if isinstance(terminal_id, str) else None
        if terminal is None:
            raise RpcError(RESOURCE_NOT_FOUND, "Unknown terminalId", {"terminalId": terminal_id})
        return terminal

    def _output_limit(self, value: JsonValue) -> int:
        if value is None:
            return self._default_output
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise RpcError(jsonrpc.INVALID_PARAMS, "outputByteLimit must be a non-negative integer")
        return min(value, self._max_output)

    def _env(self, entries: JsonValue) -> dict[str, str]:
        env = dict(self._base_env)
        if entries is None:
            return env
        if not isinstance(entries, list):
            raise RpcError(jsonrpc.INVALID_PARAMS, "env must be a list of {name, value}")
        for entry in entries:
            name = entry.get("name") if isinstance(entry, dict) else None
            value = entry.get("value") if isinstance(entry, dict) else None
            if (
                not isinstance(name, str)
                or not isinstance(value, str)
                or not name
                or "=" in name
                or "\x00" in name
                or "\x00" in value
            ):
                raise RpcError(
                    jsonrpc.INVALID_PARAMS, "env entries need a name and a value (strings)"
                )
            if name not in (OWNER_ENV, SESSION_ENV):  # the markers that find orphans stay ours
                env[name] = value
        return env

    def _open_cwd(self, cwd: JsonValue) -> int:
        """An fd of the working directory, proven inside the workspace by its real path."""
        if cwd is None:
            cwd = str(self._workspace.root)
        if not isinstance(cwd, str):
            raise RpcError(jsonrpc.INVALID_PARAMS, "cwd must be an absolute path")
        try:
            real = self._workspace.resolve(cwd)
        except WorkspaceError as exc:
            raise RpcError(
                jsonrpc.INVALID_PARAMS, f"Refused: {exc.reason}", {"path": cwd}
            ) from None
        try:
            fd = os.open(real, _DIR_FLAGS)
        except FileNotFoundError:
            raise RpcError(RESOURCE_NOT_FOUND, "Resource not found", {"path": cwd}) from None
        except OSError:
            raise RpcError(
                jsonrpc.INVALID_PARAMS, "Refused: not_a_directory", {"path": cwd}
            ) from None
        try:
            opened = Path(os.readlink(f"/proc/self/fd/{fd}"))
            inside = opened.parts[: len(self._workspace.root.parts)] == self._workspace.root.parts
            if not inside or not stat.S_ISDIR(os.fstat(fd).st_mode):
                raise PathOutsideWorkspace(cwd, "symlink_escape")
            self._workspace.check_root()
        except (OSError, WorkspaceError) as exc:
            os.close(fd)
            reason = exc.reason if isinstance(exc, WorkspaceError) else "unreadable"
            security_log.warning(
                "terminal working directory refused (%s)",
                reason,
                extra={"event": "path_refused", "path": cwd, "reason": reason, **self._context},
            )
            raise RpcError(jsonrpc.INVALID_PARAMS, f"Refused: {reason}", {"path": cwd}) from None
        return fd


def _argv(params: JsonObject) -> list[str]:
    """``command`` with ``args``; without args the command is a shell command line."""
    command, args = params.get("command"), params.get("args")
    if not isinstance(command, str) or not command or "\x00" in command:
        raise RpcError(jsonrpc.INVALID_PARAMS, "command must be a non-empty string")
    if args is None or args == []:
        return ["/bin/sh", "-c", command] if _needs_shell(command) else [command]
    if not isinstance(args, list) or not all(isinstance(a, str) and "\x00" not in a for a in args):
        raise RpcError(jsonrpc.INVALID_PARAMS, "args must be a list of strings")
    return [command, *args]


def _needs_shell(command: str) -> bool:
    return any(c.isspace() or c in "|&;<>()$`\\\"'*?[]#~=%{}" for c in command)
