"""A viewer that stopped reading, with the server's writes to it stuck, sends a frame over
the limit: the server's 1009 close can never be written, and the server lets the viewer
go after a bounded wait instead of holding it (and its own stop) for ever."""

from __future__ import annotations

import base64
import os
import socket
import time

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import LiveServer

FRAME_LIMIT = 4096


def stalled_viewer(server: LiveServer, session_id: str) -> socket.socket:
    """A WebSocket viewer of ``session_id`` that reads the handshake's answer and nothing
    more (a small receive buffer, so the server's writes stall soon)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", server.port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        f"GET /ws/sessions/{session_id} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += sock.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def masked_text_frame(payload: bytes) -> bytes:
    """One client text frame (clients must mask), payloads under 64 KiB."""
    mask = os.urandom(4)
    header = bytes([0x81, 0x80 | 126]) + len(payload).to_bytes(2, "big")
    return header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def viewers(server: LiveServer) -> float:
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    return next(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "agent_sessions_websocket_viewers"
    )


def test_a_stalled_viewer_over_the_frame_limit_is_let_go(live_server) -> None:
    server = live_server(MAX_WS_MESSAGE_BYTES=FRAME_LIMIT)
    with httpx.Client(base_url=server.url, timeout=30) as http:
        repo = http.get("/api/repos").json()["repos"][0]["id"]
        session_id = http.post("/api/sessions", json={"repoId": repo}).json()["id"]
        sock = stalled_viewer(server, session_id)
        try:
            # ~15 MB of frames: far more than the socket buffers on both sides hold
            run = http.post(f"/api/sessions/{session_id}/prompt", json={"text": "flood 3000 tool"})
            run_id = run.json()["runId"]
            deadline = time.monotonic() + 60
            while http.get(f"/api/agent-runs/{run_id}").json()["status"] == "running":
                assert time.monotonic() < deadline, "the flood did not end"
                time.sleep(0.05)
            assert viewers(server) == 1
            too_big = b'{"type":"cancel","pad":"' + b"x" * FRAME_LIMIT + b'"}'
            sock.sendall(masked_text_frame(too_big))
            deadline = time.monotonic() + 30
            while viewers(server) != 0:  # the close waits at most CLOSE_SECONDS (5 s)
                assert time.monotonic() < deadline, "the stalled viewer was never let go"
                time.sleep(0.05)
        finally:
            sock.close()
