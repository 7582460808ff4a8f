"""A viewer that stopped reading (the server's writes to it stuck) is cut off: after
WS_STALL_SECONDS without the socket taking data, or at once when its frame over the limit
asks for a 1009 close that could never be written (CLOSE_SECONDS); before, the server held
it, its frames and its own stop for ever."""

from __future__ import annotations

import base64
import contextlib
import os
import socket

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import LiveServer
from tests.helpers import wait_for

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


def flood(http: httpx.Client, server: LiveServer) -> tuple[str, socket.socket]:
    """A session with a stalled viewer, after a flood of ~15 MB of frames: far more than
    the socket buffers on both sides hold."""
    repo = http.get("/api/repos").json()["repos"][0]["id"]
    session_id = http.post("/api/sessions", json={"repoId": repo}).json()["id"]
    sock = stalled_viewer(server, session_id)
    run = http.post(f"/api/sessions/{session_id}/prompt", json={"text": "flood 3000 tool"})
    run_id = run.json()["runId"]
    wait_for(
        lambda: http.get(f"/api/agent-runs/{run_id}").json()["status"] != "running",
        "the flood did not end",
        timeout=60,
    )
    return session_id, sock


def wait_for_no_viewer(server: LiveServer) -> None:
    wait_for(lambda: viewers(server) == 0, "the stalled viewer was never let go")


def assert_cut_off(sock: socket.socket) -> None:
    """The server has closed its end: reading what it had sent ends (the kernel still
    delivers what it had taken), and no read waits for more (a timeout fails)."""
    sock.settimeout(10)
    with contextlib.suppress(ConnectionResetError):
        while sock.recv(1 << 20):
            pass


def test_a_stalled_viewer_is_cut_off(live_server) -> None:
    server = live_server(WS_STALL_SECONDS=1)
    with httpx.Client(base_url=server.url, timeout=30) as http:
        session_id, sock = flood(http, server)
        with sock:
            wait_for_no_viewer(server)
            assert_cut_off(sock)
        assert http.get(f"/api/sessions/{session_id}/messages").status_code == 200


def test_a_stalled_viewer_over_the_frame_limit_is_let_go(live_server) -> None:
    server = live_server(MAX_WS_MESSAGE_BYTES=FRAME_LIMIT)  # stalls allowed for 60 s
    with httpx.Client(base_url=server.url, timeout=30) as http:
        _, sock = flood(http, server)
        try:
            assert viewers(server) == 1
            too_big = b'{"type":"cancel","pad":"' + b"x" * FRAME_LIMIT + b'"}'
            sock.sendall(masked_text_frame(too_big))
            wait_for_no_viewer(server)  # the close waits at most CLOSE_SECONDS (5 s)
            assert_cut_off(sock)
        finally:
            sock.close()


def test_a_viewer_that_sends_commands_but_reads_no_reply_is_cut_off(live_server) -> None:
    """No session traffic at all: only the replies to its own commands pile up."""
    server = live_server(WS_STALL_SECONDS=1)
    with httpx.Client(base_url=server.url, timeout=30) as http:
        repo = http.get("/api/repos").json()["repos"][0]["id"]
        session_id = http.post("/api/sessions", json={"repoId": repo}).json()["id"]
        with stalled_viewer(server, session_id) as sock:
            sock.settimeout(5)  # the server stops reading once its replies cannot go out
            command = masked_text_frame(b'{"type":"nope","pad":"' + b"x" * 600 + b'"}')
            # each is answered with an error frame; they fill the socket buffers on both
            # sides after some 10^4 (then the server stops reading, or cuts the viewer off)
            with contextlib.suppress(TimeoutError, ConnectionResetError, BrokenPipeError):
                for _ in range(1_000_000):
                    sock.sendall(command)
            wait_for_no_viewer(server)
            assert_cut_off(sock)
