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
``stall_seconds`` (``WS_STALL_SECONDS``); then it aborts the connection (no close frame
could reach the viewer anyway), which frees the buffers and ends the viewer's stream.
The writes of one batch go to uvicorn's buffer without waiting: waiting for the socket
between them cost a tool-update flood a fifth of its rate (bench/results/notes.md), and
a batch is bounded by the viewer's queue.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import anyio
from starlette.websockets import WebSocket, WebSocketDisconnect
from websockets.exceptions import InvalidState
from websockets.protocol import Side, State

__all__ = ["STALL_SECONDS", "WRITE_BYTES", "FrameSender"]

STALL_SECONDS = 60.0  # WS_STALL_SECONDS' default

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
        protocol.transport.abort()  # uvicorn then sees the connection lost
        raise WebSocketDisconnect(1006)

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
            protocol.transport.write(b"".join(conn.data_to_send()))
            return
        if conn.state is not State.OPEN or conn.expect_continuation_frame:
            raise WebSocketDisconnect(1006)  # closing: as uvicorn's send
        parts = conn.data_to_send()  # whatever the protocol queued goes first
        size = 0
        write = protocol.transport.write
        for frame in frames:
            parts.append(_header(len(frame)))
            parts.append(frame)
            size += len(frame)
            if size >= WRITE_BYTES:
                write(b"".join(parts))
                parts, size = [], 0
        if parts:
            write(b"".join(parts))


_SMALL_HEADERS = tuple(bytes((0x81, size)) for size in range(126))


def _header(size: int) -> bytes:
    """RFC 6455's header of an unmasked, final text frame of ``size`` bytes (a server's,
    no extension): what ``Frame.serialize`` writes, without building a ``Frame``."""
    if size < 126:
        return _SMALL_HEADERS[size]
    if size < 65536:
        return b"\x81\x7e" + size.to_bytes(2, "big")
    return b"\x81\x7f" + size.to_bytes(8, "big")
