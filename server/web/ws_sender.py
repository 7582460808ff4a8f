"""Sending a viewer's queued frames: back to back, in few socket writes.

API.md gives each message its own text frame, so frames are not merged; but the frames
queued for one viewer are serialised back to back and handed to the socket in writes of
about ``WRITE_BYTES`` when the server is uvicorn's websockets-sansio protocol (its
``auto`` choice), instead of one ASGI ``send`` per frame. Profiles of a flood had a
good share of the event loop's time in ``WebSocket.send_text`` per frame
(bench/results/notes.md): three middleware wrappers, the ``str`` → UTF-8
encode for each viewer, and a ``send`` syscall per frame. Frames arrive as UTF-8 bytes,
encoded once for every viewer.

With no extension negotiated (the server turns permessage-deflate off) the frames'
headers are written here, RFC 6455's two to ten bytes before each frame's bytes, instead
of through ``Protocol.send_text`` (a ``Frame`` object, its checks and ``serialize`` per
frame per viewer, a visible share of a flood's profile); with an
extension (a client of another server configuration) the protocol frames them.

Anything else (another ASGI server, another protocol) gets one ``send`` per frame.

A viewer that stops reading (a suspended process, a dead peer TCP still thinks alive)
never lets a write through again: uvicorn keeps what it cannot send in memory and waits
for ever. Before each batch the sender waits for the socket to take data, for at most
``stall_seconds`` (``WS_STALL_SECONDS``); then it lets the viewer go (``let_go``): a
4008 close frame behind what was written, the connection closed once that is flushed
and aborted once the viewer takes nothing for ``stall_seconds``, which frees the buffers.
Every way the server lets a slow viewer go is that 4008 with its reason.
The writes of one batch go to uvicorn's buffer without waiting: waiting for the socket
between them cost a tool-update flood a fifth of its rate (bench/results/notes.md), and
a batch is bounded by the viewer's queue.
"""

from __future__ import annotations

import fcntl
import struct
import sys
from collections.abc import Iterable
from typing import Any

import anyio
from starlette.websockets import WebSocket, WebSocketDisconnect
from websockets.exceptions import InvalidState
from websockets.protocol import Side, State

__all__ = ["CLOSE_BEHIND", "STALL_SECONDS", "WRITE_BYTES", "FrameSender"]

STALL_SECONDS = 60.0  # WS_STALL_SECONDS' default
CLOSE_BEHIND = 4008  # API.md: the client fell too far behind (reconnect with after)

# Linux's SIOCOUTQ (TIOCOUTQ): the bytes in a socket's send queue
_OUTQ: int | None = 0x5411 if sys.platform == "linux" else None
_MAX_DEPTH = 8
# Frames go to the transport in writes of about this many bytes. One write of a whole
# backlog (a flood of ~5 KB tool updates: thousands of frames, megabytes) joined it into
# fresh memory each time: perf of the server over a tool-update flood had that join as
# the largest source of the event loop thread's page faults. A join under glibc's mmap
# threshold (128 KiB) reuses freed heap memory; a flood of ~100-byte text frames still
# takes one write per several hundred frames.
WRITE_BYTES = 64 * 1024


def _sansio_protocol(send: Any) -> Any | None:
    """uvicorn's websockets-sansio protocol behind ``send`` (the innermost ASGI send, a
    bound method of the protocol, under middleware closures), or None."""
    try:
        from uvicorn.protocols.websockets.websockets_sansio_impl import (
            WebSocketsSansIOProtocol,
        )
    except ImportError:  # pragma: no cover - uvicorn without websockets
        return None
    todo, seen = [(send, 0)], set()
    while todo:
        item, depth = todo.pop()
        if id(item) in seen or depth > _MAX_DEPTH:
            continue
        seen.add(id(item))
        owner = getattr(item, "__self__", None)
        if isinstance(owner, WebSocketsSansIOProtocol):
            return owner
        for cell in getattr(item, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if callable(value):
                todo.append((value, depth + 1))
    return None


class FrameSender:
    """Sends frames (UTF-8 JSON text, as bytes) to one viewer."""

    def __init__(self, websocket: WebSocket, stall_seconds: float = STALL_SECONDS) -> None:
        self._websocket = websocket
        self._protocol = _sansio_protocol(websocket._send)
        self._stall_seconds = stall_seconds
        self.written = 0  # bytes handed to the transport (what ws_liveness counts against)

    async def writable(self, within: float | None = None) -> None:
        """Wait until the socket takes data (the transport's flow control, as uvicorn's
        send waits); after ``within`` seconds without (default ``stall_seconds``), abort
        the connection and raise WebSocketDisconnect. Under another ASGI server: at once."""
        protocol = self._protocol
        if protocol is None or protocol.writable.is_set():
            return
        with anyio.move_on_after(self._stall_seconds if within is None else within):
            await protocol.writable.wait()
            return
        self.let_go("stalled: took no data for too long; reconnect with after=<last seq>")
        raise WebSocketDisconnect(CLOSE_BEHIND)

    @property
    def direct(self) -> bool:
        """Whether frames go to uvicorn's websockets-sansio protocol directly."""
        return self._protocol is not None

    @property
    def protocol(self) -> Any | None:
        """uvicorn's websockets-sansio protocol of this viewer, or None."""
        return self._protocol

    def let_go(self, reason: str) -> None:
        """Close the viewer with 4008 and ``reason``, behind what was already written,
        without waiting for the socket: the close frame goes to the transport's buffer,
        which is flushed and then closed; a viewer still reading gets every frame and
        then the 4008 (so it knows to resume by cursor). Once it takes no data for
        ``stall_seconds``, the rest is dropped with the connection (``abort``). Under
        another ASGI server: nothing (the caller closes)."""
        protocol = self._protocol
        if protocol is None or protocol.close_sent or protocol.transport.is_closing():
            return
        try:
            protocol.conn.send_close(CLOSE_BEHIND, reason)
        except InvalidState:
            return  # closing already
        transport = protocol.transport
        transport.write(b"".join(protocol.conn.data_to_send()))
        protocol.close_sent = True
        transport.close()  # after its buffer is written
        _abort_when_stuck(protocol.loop, transport, self._stall_seconds, -1)

    async def send(self, frames: Iterable[bytes]) -> None:
        protocol = self._protocol
        if protocol is None:
            for frame in frames:
                await self._websocket.send_text(frame.decode())
            return
        await self.writable()
        if protocol.disconnected or protocol.close_sent:
            raise WebSocketDisconnect(1006)
        conn = protocol.conn
        if conn.extensions or conn.side is not Side.SERVER or conn.debug:
            try:
                for frame in frames:
                    conn.send_text(frame)
            except InvalidState:  # closing: as uvicorn's send
                raise WebSocketDisconnect(1006) from None
            data = b"".join(conn.data_to_send())
            self.written += len(data)
            protocol.transport.write(data)
            return
        if conn.state is not State.OPEN or conn.expect_continuation_frame:
            raise WebSocketDisconnect(1006)  # closing: as uvicorn's send
        parts = conn.data_to_send()  # whatever the protocol queued goes first
        size = total = 0
        write = protocol.transport.write
        for frame in frames:
            parts.append(_header(len(frame)))
            parts.append(frame)
            size += len(frame)
            if size >= WRITE_BYTES:
                write(b"".join(parts))
                total += size
                parts, size = [], 0
        if parts:
            write(b"".join(parts))
        self.written += total + size  # frames' bytes (their headers aside: a few each)


def pending_bytes(transport: Any) -> int:
    """Bytes written to ``transport`` the viewer has not taken yet: its buffer, and on
    Linux the socket's send queue (the kernel reports the socket writable only once a
    third of its buffer is free: megabytes, at a slow viewer's pace seconds, in which the
    transport's buffer alone does not move)."""
    pending = int(transport.get_write_buffer_size())
    sock = transport.get_extra_info("socket")
    if sock is not None and _OUTQ is not None:
        try:
            pending += struct.unpack("i", fcntl.ioctl(sock.fileno(), _OUTQ, b"\0" * 4))[0]
        except OSError:
            pass  # closed meanwhile
    return pending


def _abort_when_stuck(loop: Any, transport: Any, seconds: float, before: int) -> None:
    """Every ``seconds``: a closing transport whose pending bytes did not shrink since the
    last look (the viewer took nothing) is dropped; one that did is looked at again."""
    if transport.is_closing() and not transport.get_write_buffer_size():
        return  # flushed: the transport closes by itself (the kernel sends the rest)
    left = pending_bytes(transport)
    if 0 <= before <= left:
        transport.abort()
        return
    loop.call_later(seconds, _abort_when_stuck, loop, transport, seconds, left)


_SMALL_HEADERS = tuple(bytes((0x81, size)) for size in range(126))


def _header(size: int) -> bytes:
    """RFC 6455's header of an unmasked, final text frame of ``size`` bytes (a server's,
    no extension): what ``Frame.serialize`` writes, without building a ``Frame``."""
    if size < 126:
        return _SMALL_HEADERS[size]
    if size < 65536:
        return b"\x81\x7e" + size.to_bytes(2, "big")
    return b"\x81\x7f" + size.to_bytes(8, "big")
