"""The anyio driver around the sans-I/O JSON-RPC core: one reader, one writer behind a
lock, stderr always drained into a bounded tail, messages handled in arrival order."""

from __future__ import annotations

import logging
import signal
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any, Protocol

import anyio
from anyio.abc import TaskGroup

from agent_bridge import jsonrpc
from agent_bridge.errors import AgentExited, ProtocolBroken, RpcError
from agent_bridge.jsontypes import JsonValue
from agent_bridge.process import AgentProcess, ProcessSpec

__all__ = ["AgentConnection", "AgentHandler", "connect_agent"]

log = logging.getLogger("agent_sessions.bridge")

READ_CHUNK = 256 * 1024
STDERR_TAIL_BYTES = 16 * 1024
STDERR_TAIL_LINES = 20
STDERR_EOF_WAIT = 1.0


class AgentHandler(Protocol):
    """What the connection calls back into, in the order the agent wrote its lines."""

    async def on_notifications(self, notes: list[jsonrpc.Notification]) -> None:
        """Consecutive notifications of one read from the pipe, in order: one call for
        all of them (a flood's chunk is one batch, not one await chain per line)."""
        ...

    async def on_request(self, request: jsonrpc.Request) -> Awaitable[JsonValue]:
        """Runs in order; returns the awaitable answer, awaited in its own task (a
        permission may wait on a person). Raise RpcError to answer with an error."""
        ...


class _Pending:
    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.result: JsonValue = None
        self.error: BaseException | None = None


class AgentConnection:
    """A live JSON-RPC connection to one agent process."""

    def __init__(
        self, process: AgentProcess, handler: AgentHandler, *, max_line_bytes: int
    ) -> None:
        self.process = process
        self._handler = handler
        self._rpc = jsonrpc.JsonRpcConnection(max_line_bytes=max_line_bytes)
        self._pending: dict[int, _Pending] = {}
        self._write_lock = anyio.Lock()
        self._stderr_tail = bytearray()
        self._stderr_done = anyio.Event()
        self._stdout_done = anyio.Event()
        self.exited = anyio.Event()
        self.exit_code: int | None = None
        self.failure: str | None = None  # why the connection broke, if it was not a plain exit
        self._tg: TaskGroup | None = None

    # -- state -------------------------------------------------------------------------

    @property
    def stderr_tail(self) -> str:
        text = bytes(self._stderr_tail).decode("utf-8", errors="replace")
        return "\n".join(text.splitlines()[-STDERR_TAIL_LINES:])

    def exit_error(self) -> AgentExited:
        return AgentExited(self.exit_code, self.stderr_tail)

    # -- sending -----------------------------------------------------------------------

    async def _flush(self) -> None:
        data = self._rpc.data_to_send()
        if not data or self.process.stdin is None:
            return
        async with self._write_lock:
            try:
                self.process.stdin.write(data)
                await self.process.stdin.drain()
            except (BrokenPipeError, ConnectionResetError, RuntimeError) as exc:
                log.info("agent stdin closed: %s", type(exc).__name__)

    async def request(
        self,
        method: str,
        params: JsonValue = None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - per-request deadline, an RPC API
    ) -> JsonValue:
        """Send a request and wait for its answer. Raises RpcError for an error answer,
        AgentExited when the process is gone, TimeoutError after ``timeout``."""
        if self.exited.is_set():
            raise self.exit_error()
        request_id = self._rpc.send_request(method, params)
        pending = self._pending[request_id] = _Pending()
        try:
            await self._flush()
            with anyio.fail_after(timeout):
                await pending.done.wait()
        finally:
            if self._pending.pop(request_id, None) is not None and not pending.done.is_set():
                self._rpc.forget_request(request_id)
        if pending.error is not None:
            raise pending.error
        return pending.result

    async def notify(self, method: str, params: JsonValue = None) -> None:
        if not self.exited.is_set():
            self._rpc.send_notification(method, params)
            await self._flush()

    # -- receiving ---------------------------------------------------------------------

    async def _answer(self, request_id: jsonrpc.RequestId, answer: Awaitable[JsonValue]) -> None:
        try:
            result = await answer
        except RpcError as exc:
            self._rpc.send_error(request_id, exc.code, exc.message, exc.data)
        except Exception:
            log.exception("handler failed answering request %r", request_id)
            self._rpc.send_error(request_id, jsonrpc.INTERNAL_ERROR, "Internal error")
        else:
            self._rpc.send_result(request_id, result)
        await self._flush()

    async def _dispatch(self, event: jsonrpc.Event) -> bool:
        """Handle one event; False when the connection is broken."""
        if isinstance(event, jsonrpc.Notification):
            await self._notify([event])
        elif isinstance(event, jsonrpc.Request):
            try:
                answer = await self._handler.on_request(event)
            except RpcError as exc:
                self._rpc.send_error(event.id, exc.code, exc.message, exc.data)
            except Exception:
                log.exception("request handler failed for %s", event.method)
                self._rpc.send_error(event.id, jsonrpc.INTERNAL_ERROR, "Internal error")
            else:
                assert self._tg is not None
                self._tg.start_soon(self._answer, event.id, answer)
        elif isinstance(event, jsonrpc.Response):
            pending = self._pending.get(int(event.id)) if isinstance(event.id, int) else None
            if pending is not None:
                if event.error is not None:
                    pending.error = RpcError(
                        int(event.error.get("code", 0)),
                        str(event.error.get("message", "")),
                        event.error.get("data"),
                    )
                else:
                    pending.result = event.result
                pending.done.set()
        elif isinstance(event, jsonrpc.InvalidLine):
            log.warning(
                "skipped a line from the agent: %s",
                event.reason,
                extra={
                    "event": "agent_invalid_line",
                    "line": event.line[:200].decode("utf-8", "replace"),
                },
            )
        elif isinstance(event, jsonrpc.UnexpectedResponse):
            log.warning("response to an unknown request id from the agent")
        elif isinstance(event, jsonrpc.LineTooLong):
            self.failure = f"the agent wrote a line over the limit ({event.size} bytes)"
            log.error(self.failure, extra={"event": "agent_line_too_long"})
            return False
        return True

    async def _notify(self, notes: list[jsonrpc.Notification]) -> None:
        try:
            await self._handler.on_notifications(notes)
        except Exception:
            log.exception("notification handler failed for %s", notes[0].method)

    async def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        stdout = self.process.stdout
        notification = jsonrpc.Notification
        try:
            while True:
                chunk = await stdout.read(READ_CHUNK)
                events = self._rpc.receive_data(chunk) if chunk else self._rpc.receive_eof()
                notes: list[jsonrpc.Notification] = []
                for event in events:
                    if type(event) is notification:  # handled in runs, in order
                        notes.append(event)
                        continue
                    if notes:
                        await self._notify(notes)
                        notes = []
                    if not await self._dispatch(event):
                        # Broken: nothing more is read. Our pipe ends close too, or a
                        # descendant holding theirs would keep the exit from being seen.
                        self.process.signal_group(signal.SIGKILL)
                        self.process.close_pipes()
                        return
                if notes:
                    await self._notify(notes)
                await self._flush()
                if not chunk:
                    return
        finally:
            self._stdout_done.set()
            with anyio.CancelScope(shield=True):
                await self._finish()

    async def _finish(self) -> None:
        self.exit_code = await self.process.wait()
        self.process.signal_group(signal.SIGKILL)
        with anyio.move_on_after(STDERR_EOF_WAIT):
            await self._stderr_done.wait()
        error = ProtocolBroken(self.failure) if self.failure else self.exit_error()
        for pending in self._pending.values():
            pending.error = error
            pending.done.set()
        self.exited.set()
        log.info(
            "agent process exited",
            extra={"event": "agent_exited", "pid": self.process.pid, "exit_code": self.exit_code},
        )

    async def _watch_exit(self) -> None:
        """Once the process has exited, give its last output a moment, then close our
        pipe ends: a detached descendant holding stdout must not hide the exit."""
        await self.process.exited()
        with anyio.move_on_after(STDERR_EOF_WAIT):
            await self._stdout_done.wait()
        if not self._stdout_done.is_set():
            log.warning(
                "the agent exited but something it started holds its stdout; closing it",
                extra={"event": "agent_pipes_held", "pid": self.process.pid},
            )
        self.process.close_pipes()

    async def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        try:
            while chunk := await self.process.stderr.read(READ_CHUNK):
                self._stderr_tail += chunk
                if len(self._stderr_tail) > STDERR_TAIL_BYTES:
                    del self._stderr_tail[:-STDERR_TAIL_BYTES]
        finally:
            self._stderr_done.set()


@asynccontextmanager
async def connect_agent(
    spec: ProcessSpec,
    handler: AgentHandler,
    *,
    max_line_bytes: int,
    stop_grace: float,
    polite_stop: Any = None,
) -> AsyncIterator[AgentConnection]:
    """Spawn the agent and run its connection; leaving the block stops the process by
    escalation (shielded) and waits for every task of the connection."""
    process = await AgentProcess.spawn(spec)
    conn = AgentConnection(process, handler, max_line_bytes=max_line_bytes)
    async with anyio.create_task_group() as tg:
        conn._tg = tg
        tg.start_soon(conn._drain_stderr)
        tg.start_soon(conn._read_stdout)
        tg.start_soon(conn._watch_exit)
        try:
            yield conn
        finally:
            with anyio.CancelScope(shield=True):
                polite = (lambda: polite_stop(conn)) if polite_stop is not None else None
                await process.stop(stop_grace, polite)
                with anyio.move_on_after(stop_grace + STDERR_EOF_WAIT):
                    await conn.exited.wait()
            tg.cancel_scope.cancel()
