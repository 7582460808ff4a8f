"""Every way the server lets a slow viewer go is API.md's 4008 with its reason, on a real
server (uvicorn): a viewer that keeps reading, slower than a flood, reads every frame sent
before it and then the 4008 (it was cut off with 1006, no close frame, when the socket
did not drain within WS_STALL_SECONDS, or 1011 by uvicorn's keepalive); a viewer that
answers no ping is let go with 4008 too; and one that closes during its replay is noticed
at once (the server did not read its frames until the replay ended)."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.conftest import LiveServer
from tests.helpers import wait_for
from tests.security.test_stalled_viewer import masked_text_frame, stalled_viewer, viewers


def _session(http: httpx.Client) -> str:
    repo = http.get("/api/repos").json()["repos"][0]["id"]
    return str(http.post("/api/sessions", json={"repoId": repo}).json()["id"])


def _read_frames(sock: socket.socket, deadline: float) -> list[tuple[int, bytes]]:
    """The server's frames (opcode, payload) until it closes or the deadline passes."""
    data = b""
    sock.settimeout(1)
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(1 << 16)
        except TimeoutError:
            continue
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    frames, index = [], 0
    while index + 2 <= len(data):
        opcode, size = data[index] & 0x0F, data[index + 1] & 0x7F
        index += 2
        if size == 126:
            size, index = int.from_bytes(data[index : index + 2], "big"), index + 2
        elif size == 127:
            size, index = int.from_bytes(data[index : index + 8], "big"), index + 8
        frames.append((opcode, data[index : index + size]))
        index += size
    return frames


def test_a_slow_reader_gets_every_frame_then_4008(live_server: Callable[..., LiveServer]) -> None:
    """A viewer slower than a flood, at the limit: it takes nothing for a while, whatever
    this machine's pace (a reader pacing itself at a fixed rate kept up with a flood slowed
    by a busy machine, and waited for a 4008 that had no reason to come). The server lets
    it go after WS_STALL_SECONDS, and reading on it gets every frame written before the
    4008, gap-free, then the close frame (it was cut off with 1006, no close frame)."""
    server = live_server(WS_STALL_SECONDS=2)
    with httpx.Client(base_url=server.url, timeout=30) as http:
        session_id = _session(http)
        url = f"{server.ws_url}/ws/sessions/{session_id}"
        # A small receive buffer, and a client queue of 4 frames: the ~30 MB of the flood
        # cannot wait in buffers, so the server's writes wait on this viewer.
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        sock.connect(("127.0.0.1", server.port))
        with connect(url, sock=sock, origin=server.url, max_queue=4, ping_interval=None) as ws:
            assert json.loads(ws.recv())["type"] == "hello"
            http.post(f"/api/sessions/{session_id}/prompt", json={"text": "flood 6000 tool"})
            seqs: list[int] = []
            frame = json.loads(ws.recv(timeout=60))  # the turn has begun
            if frame["type"] == "message":
                seqs.append(frame["message"]["seq"])
            # taking nothing until the server lets it go (its own gauge, in another process)
            wait_for(lambda: viewers(server) == 0, "the server letting the viewer go", 60)
            try:
                while True:
                    frame = json.loads(ws.recv(timeout=30))
                    if frame["type"] == "message":
                        seqs.append(frame["message"]["seq"])
            except ConnectionClosed as closed:
                assert closed.rcvd is not None, "cut off without a close frame"
                assert closed.rcvd.code == 4008, closed.rcvd
                assert "reconnect with after" in closed.rcvd.reason
        assert len(seqs) > 1
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # no gap before the 4008


def test_a_viewer_that_answers_no_ping_is_let_go_with_4008(
    live_server: Callable[..., LiveServer],
) -> None:
    server = live_server(WS_STALL_SECONDS=1)
    with httpx.Client(base_url=server.url, timeout=30) as http:
        session_id = _session(http)
        with stalled_viewer(server, session_id) as sock:  # reads, never answers a ping
            frames = _read_frames(sock, time.monotonic() + 15)
    opcodes = [opcode for opcode, _ in frames]
    assert 0x9 in opcodes, "the server asked for a pong"
    assert opcodes[-1] == 0x8, frames[-3:]
    close = frames[-1][1]
    assert int.from_bytes(close[:2], "big") == 4008
    assert b"reconnect with after" in close[2:]


def _server_send_queue(server_port: int, client_port: int) -> int:
    """Bytes the server's end of this connection has sent and the viewer not taken."""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote = fields[1], fields[2]
        if int(local.split(":")[1], 16) == server_port and int(remote.split(":")[1], 16) == (
            client_port
        ):
            return int(fields[4].split(":")[0], 16)
    return 0


def _wait_replay_stuck(server: LiveServer, sock: socket.socket) -> None:
    """Until the server's writes to ``sock`` stopped: its send queue full and not moving."""
    port = sock.getsockname()[1]
    deadline = time.monotonic() + 30
    last = -1
    while True:
        queued = _server_send_queue(server.port, port)
        if queued > 65536 and queued == last:
            return
        assert time.monotonic() < deadline, "the replay never filled the socket"
        last = queued
        time.sleep(0.2)  # polling the kernel's view of a socket we do not own


def test_a_viewer_closing_during_its_replay_is_noticed(
    live_server: Callable[..., LiveServer],
) -> None:
    server = live_server(WS_STALL_SECONDS=60)
    with httpx.Client(base_url=server.url, timeout=30) as http:
        session_id = _session(http)
        run = http.post(f"/api/sessions/{session_id}/prompt", json={"text": "flood 12000 tool"})
        run_id = run.json()["runId"]
        deadline = time.monotonic() + 60
        while http.get(f"/api/agent-runs/{run_id}").json()["status"] == "running":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        sock = stalled_viewer(server, session_id)  # its replay fills the socket buffers
        with sock:
            _wait_replay_stuck(server, sock)  # the server waits for the socket now
            close = bytes([0x88, 0x82]) + b"\x00\x00\x00\x00" + (1000).to_bytes(2, "big")
            sock.sendall(close)
            started = time.monotonic()
            while viewers(server) != 0:
                assert time.monotonic() - started < 10, "the close was not noticed"
                time.sleep(0.05)
            with contextlib.suppress(OSError):
                sock.sendall(masked_text_frame(b"{}"))
