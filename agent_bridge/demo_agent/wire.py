"""JSON-RPC 2.0 over newline-delimited stdio, for the agent side.

Reading happens on a thread (plain blocking ``os.read`` on fd 0, so stdin can be a
pipe, a file or a terminal and is never switched to non-blocking mode); complete lines
cross into the event loop through a bounded hand-off. Writing happens in one writer
task that owns fd 1: every outgoing line goes through one bounded queue, so
notifications and responses keep the order in which they were produced.

The writer flushes after every line unless the line asks to be batched; a batched line
is flushed when the queue runs empty or after ``BATCH_LINES`` unflushed lines.

Requests that the agent sends get ids from a counter of its own (the client's ids are
a separate space); ``request`` waits for the answer, and a request whose caller is
cancelled is abandoned: its late answer is logged and dropped.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["BATCH_LINES", "MAX_LINE", "JsonObject", "RemoteError", "Wire", "log"]

BATCH_LINES = 64
MAX_LINE = 64 * 1024 * 1024
_READ_CHUNK = 1 << 16
_INBOX_SIZE = 256
_OUTBOX_SIZE = 256

# A JSON object on the wire (a message, its params, a result): the demo agent imports only
# the standard library, so it names this itself (agent_bridge.jsontypes is the same).
JsonObject = dict[str, Any]
Message = JsonObject


def log(text: str) -> None:
    """One line on stderr: the agent's only log channel."""
    try:
        sys.stderr.write(f"demo agent: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class RemoteError(Exception):
    """The client answered one of our requests with a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass
class _Outgoing:
    payload: Message | bytes
    flush: bool
    stamp: JsonObject | None  # gets "t" = time.time() just before encoding
    lines: int = 1  # lines in a bytes payload (for BATCH_LINES)

    def encode(self) -> bytes:
        if isinstance(self.payload, bytes):
            return self.payload
        if self.stamp is not None:
            self.stamp["t"] = time.time()
        return json.dumps(self.payload, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


_EOF = object()
_OVERSIZED = object()


class Wire:
    """The agent's end of the connection."""

    def __init__(self, in_fd: int = 0, out_fd: int = 1) -> None:
        self._in_fd = in_fd
        self._out_fd = out_fd
        self._inbox: asyncio.Queue[object] = asyncio.Queue()
        self._inbox_slots = threading.BoundedSemaphore(_INBOX_SIZE)
        self._outbox: asyncio.Queue[_Outgoing] = asyncio.Queue(_OUTBOX_SIZE)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self.muted = False  # drop everything we would write
        self._listening = True
        self._at_eof = False
        self.broken = asyncio.Event()  # stdout is gone (EPIPE)

    # -- lifecycle --------------------------------------------------------------

    def start(self, spawn: Callable[[Any], object]) -> None:
        """Start the reader thread and, through ``spawn`` (a task group's
        ``create_task``), the writer task."""
        loop = asyncio.get_running_loop()
        threading.Thread(target=self._read_stdin, args=(loop,), name="stdin", daemon=True).start()
        spawn(self._write_loop())

    def stop_listening(self) -> None:
        """From now on, drop every incoming line unanswered and never report the end
        of input: ``receive`` blocks for good. stdin is still read, so the client's
        writes never block."""
        self._listening = False

    async def wait_drained(self, timeout: float) -> None:  # noqa: ASYNC109 - a bound on the flush
        """Wait until everything queued so far is written and flushed."""
        try:
            await asyncio.wait_for(self._outbox.join(), timeout)
        except TimeoutError:
            log("stdout did not drain in time")

    # -- receiving --------------------------------------------------------------

    async def receive(self) -> Message | None:
        """The next request or notification; None at end of input. Responses are
        matched to our pending requests here; malformed input is answered here."""
        while not self._at_eof:
            item = await self._inbox.get()
            self._inbox_slots.release()
            if item is _EOF:
                self._at_eof = True
                break
            if not self._listening:
                continue
            if item is _OVERSIZED:
                await self.send_error(None, -32600, "Invalid Request: line too long")
                continue
            assert isinstance(item, bytes)
            try:
                msg = json.loads(item)
            except (ValueError, RecursionError):
                await self.send_error(None, -32700, "Parse error")
                continue
            checked = await self._classify(msg)
            if checked is not None:
                return checked
        if not self._listening:
            await asyncio.Event().wait()  # deaf: run until killed
        return None

    async def _classify(self, msg: object) -> Message | None:
        if not isinstance(msg, dict):
            await self.send_error(None, -32600, "Invalid Request")
            return None
        has_id = "id" in msg
        msg_id = msg.get("id")
        if "method" in msg:
            if not isinstance(msg["method"], str) or msg.get("jsonrpc") != "2.0":
                if has_id:
                    await self.send_error(msg_id, -32600, "Invalid Request")
                return None
            return msg
        if has_id and ("result" in msg or "error" in msg):
            self._resolve(msg)
            return None
        await self.send_error(msg_id if has_id else None, -32600, "Invalid Request")
        return None

    def _resolve(self, msg: Message) -> None:
        msg_id = msg["id"]
        known = isinstance(msg_id, int) and not isinstance(msg_id, bool)
        future = self._pending.get(msg_id) if known else None
        if future is None or future.done():
            log(f"dropping the answer to request {msg_id!r} (unknown or abandoned)")
            return
        error = msg.get("error")
        if error is not None:
            code = error.get("code") if isinstance(error, dict) else None
            text = error.get("message") if isinstance(error, dict) else None
            future.set_exception(
                RemoteError(code if isinstance(code, int) else -32603, str(text or "error"))
            )
        else:
            future.set_result(msg.get("result"))

    def _read_stdin(self, loop: asyncio.AbstractEventLoop) -> None:
        buffer = bytearray()
        skipping = False  # inside an oversized line, until its newline
        while True:
            try:
                chunk = os.read(self._in_fd, _READ_CHUNK)
            except OSError:
                chunk = b""
            if not chunk:
                if buffer.strip() and not skipping:
                    self._post(loop, bytes(buffer))
                self._post(loop, _EOF)
                return
            start = 0
            while (end := chunk.find(b"\n", start)) != -1:
                if skipping:
                    skipping = False
                else:
                    buffer += chunk[start:end]
                    if buffer.strip():
                        self._post(loop, bytes(buffer))
                buffer.clear()
                start = end + 1
            if not skipping:
                buffer += chunk[start:]
                if len(buffer) > MAX_LINE:
                    buffer.clear()
                    skipping = True
                    self._post(loop, _OVERSIZED)

    def _post(self, loop: asyncio.AbstractEventLoop, item: object) -> None:
        self._inbox_slots.acquire()
        try:
            loop.call_soon_threadsafe(self._inbox.put_nowait, item)
        except RuntimeError:  # the loop is closed: the agent is exiting
            pass

    # -- sending ----------------------------------------------------------------

    async def send(
        self,
        payload: Message | bytes,
        *,
        flush: bool = True,
        stamp: JsonObject | None = None,
        lines: int = 1,
    ) -> None:
        """Queue one message, or raw bytes: the garbage modes' lines, or ``lines``
        encoded lines at once (the flood's)."""
        if self.muted or self.broken.is_set():
            return
        await self._outbox.put(_Outgoing(payload, flush, stamp, lines))

    async def notify(self, method: str, params: Message) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def send_result(self, msg_id: Any, result: Any) -> None:
        await self.send({"jsonrpc": "2.0", "id": msg_id, "result": result})

    async def send_error(self, msg_id: Any, code: int, message: str) -> None:
        error = {"code": code, "message": message}
        await self.send({"jsonrpc": "2.0", "id": msg_id, "error": error})

    async def request(self, method: str, params: Message) -> Any:
        """Send a request to the client and wait for its result; raises RemoteError."""
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        try:
            await self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
            return await future
        finally:
            del self._pending[msg_id]

    async def _write_loop(self) -> None:
        buffer = bytearray()
        unflushed = 0  # lines in the buffer
        items = 0  # queue items in the buffer
        while True:
            item = await self._outbox.get()
            while True:
                buffer += item.encode()
                unflushed += item.lines
                items += 1
                if item.flush or unflushed >= BATCH_LINES or self._outbox.empty():
                    self._flush(buffer)
                    for _ in range(items):
                        self._outbox.task_done()
                    unflushed = items = 0
                try:
                    item = self._outbox.get_nowait()
                except asyncio.QueueEmpty:
                    break

    def _flush(self, buffer: bytearray) -> None:
        view = memoryview(buffer)
        try:
            while view and not self.broken.is_set():
                view = view[os.write(self._out_fd, view) :]
        except OSError as exc:  # EPIPE and friends: the client is gone
            log(f"stdout closed ({exc.__class__.__name__})")
            self.broken.set()
        finally:
            view.release()
            buffer.clear()
