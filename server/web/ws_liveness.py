"""A viewer's liveness, checked by the server itself instead of uvicorn's keepalive.

uvicorn pings every 20 s and fails the connection (1011 "keepalive ping timeout") when no
pong comes within 20 s; a viewer that keeps reading, but slower than a flood, reads the
ping only after the megabytes queued before it, and its pong came too late: it was cut
off with 1011 (or 1006, no close frame), never API.md's 4008, so it did not know to
resume by cursor. The server turns uvicorn's pings off (``serve``) and runs this beside
each viewer instead: a viewer is alive while the socket takes data; when nothing is
queued for it, a ping is sent and its pong counts. Neither for ``WS_STALL_SECONDS``:
it is let go with 4008 and the reason (``FrameSender.let_go``).
"""

from __future__ import annotations

import os
import time

import anyio

from server.web.ws_sender import FrameSender, pending_bytes

__all__ = ["watch"]


async def watch(sender: FrameSender, stall_seconds: float) -> bool:
    """Run for the viewer's lifetime (cancelled with its stream); returns True once it
    let the viewer go, False at once under another ASGI server (it keeps its own pings)."""
    protocol = sender.protocol
    if protocol is None:
        return False
    transport = protocol.transport
    interval = max(0.05, stall_seconds / 4)
    progress = time.monotonic()
    queued, written = pending_bytes(transport), sender.written
    ping: bytes | None = None
    while True:
        await anyio.sleep(interval)
        if protocol.close_sent or transport.is_closing():
            return True
        now = time.monotonic()
        size = pending_bytes(transport)
        drained = queued + (sender.written - written) > size  # the socket took some
        answered = ping is not None and protocol.pending_ping_payload != ping
        if drained or answered or (size == 0 and ping is None):
            progress = now
        queued, written = size, sender.written
        if answered:
            ping = None
        if now - progress >= stall_seconds:
            sender.let_go("no answer for too long; reconnect with after=<last seq>")
            return True
        if size == 0 and ping is None:  # nothing queued: ask for a pong
            ping = os.urandom(4)
            protocol.pending_ping_payload = ping  # uvicorn's handle_pong clears it on the answer
            protocol.ping_sent_at = protocol.loop.time()
            protocol.conn.send_ping(ping)
            transport.write(b"".join(protocol.conn.data_to_send()))
