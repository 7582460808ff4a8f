"""The probes of ``scripts/bench-scale``: HTTP page latency on one kept-alive connection,
and a WebSocket replay read by a minimal client.

The replay client is a plain socket that does the RFC 6455 handshake and then only
splits frames (server frames are unmasked) and looks at the first bytes of each
payload: a few microseconds a frame in Python, so what it measures is the server's
replay rate, not a client library's parsing (a ``websockets`` client reads ~30 000
frames/s here).
"""

from __future__ import annotations

import base64
import http.client
import os
import socket
import struct
import time
from typing import Any

from benchlib.procs import cpu_seconds
from benchlib.stats import median, percentile

__all__ = ["page_latency", "replay"]


def page_latency(port: int, pid: int, path: str, samples: int) -> dict[str, Any]:
    """``samples`` GETs of ``path`` on one connection (after one warm-up): ms p50/p95/min,
    and the server's CPU per request (less sensitive than wall time to a busy machine)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    times: list[float] = []
    size = 0
    cpu0 = 0.0
    try:
        for n in range(samples + 1):
            if n == 1:
                cpu0 = cpu_seconds(pid)
            started = time.perf_counter()
            conn.request("GET", path)
            response = conn.getresponse()
            body = response.read()
            elapsed = time.perf_counter() - started
            if response.status != 200:
                raise RuntimeError(f"GET {path} -> {response.status}: {body[:300]!r}")
            if n:
                times.append(elapsed * 1e3)
            size = len(body)
        cpu = cpu_seconds(pid) - cpu0
    finally:
        conn.close()
    return {
        "path": path,
        "p50_ms": median(times),
        "p95_ms": percentile(times, 95),
        "min_ms": min(times),
        "server_cpu_ms": cpu / samples * 1e3,
        "bytes": size,
    }


def _recv_exact(sock: socket.socket, buf: bytearray, n: int) -> None:
    while len(buf) < n:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("the server closed the connection during the replay")
        buf += chunk


def replay(port: int, pid: int, path: str, timeout: float = 300) -> dict[str, Any]:
    """Open ``path`` as a WebSocket, count the frames between ``hello`` and ``live``."""
    cpu0 = cpu_seconds(pid)
    started = time.perf_counter()
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        key = base64.b64encode(os.urandom(16)).decode()
        sock.sendall(
            (
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        buf = bytearray()
        while b"\r\n\r\n" not in buf:
            _recv_exact(sock, buf, len(buf) + 1)
        head, _, rest = bytes(buf).partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise RuntimeError(f"WebSocket handshake refused: {head[:200]!r}")
        buf = bytearray(rest)
        pos, frames, first_frame, payload_bytes = 0, 0, None, 0
        while True:
            if len(buf) - pos < 10:
                del buf[:pos]
                pos = 0
                _recv_exact(sock, buf, 2)
            opcode, length = buf[pos] & 0x0F, buf[pos + 1] & 0x7F
            header = 2
            if length == 126:
                _recv_exact(sock, buf, pos + 4)
                (length,) = struct.unpack_from("!H", buf, pos + 2)
                header = 4
            elif length == 127:
                _recv_exact(sock, buf, pos + 10)
                (length,) = struct.unpack_from("!Q", buf, pos + 2)
                header = 10
            end = pos + header + length
            if len(buf) < end:
                del buf[:pos]
                end -= pos
                pos = 0
                _recv_exact(sock, buf, end)
            body = bytes(buf[pos + header : pos + header + 24])
            pos = end
            if opcode == 8:
                raise RuntimeError(f"closed by the server during the replay: {body!r}")
            if first_frame is None:
                first_frame = time.perf_counter()
                continue  # hello
            if body.startswith(b'{"type":"live"'):
                break
            frames += 1
            payload_bytes += length
        done = time.perf_counter()
        cpu = cpu_seconds(pid) - cpu0
    finally:
        sock.close()
    assert first_frame is not None
    return {
        "messages": frames,
        "seconds": done - started,
        "messages_per_s": frames / (done - started),
        "after_hello_per_s": frames / max(done - first_frame, 1e-9),
        "mb_per_s": payload_bytes / (done - started) / 1e6,
        "server_cpu_us_per_message": cpu / max(frames, 1) * 1e6,
    }
