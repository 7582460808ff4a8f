"""ALLOWED_HOSTS (DNS rebinding), the security headers on every response, and secrets that
never show in a repr, a log line or an error."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from server.app import create_app
from server.settings import Settings
from tests.conftest import LiveServer
from tests.helpers import create_session

TOKEN = "tok-3c1e9a77f0"
SECRET = "sec-b5d20e41aa"
MISSING = "00000000-0000-4000-8000-000000000000"


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("localhost", True),
        ("localhost:8000", True),
        ("LOCALHOST:8000", True),
        ("127.0.0.1:8000", True),
        ("[::1]:8000", True),
        ("evil.example:8000", False),
        ("evil.example", False),
        ("localhost.evil.example", False),
        ("127.0.0.1.nip.io:8000", False),
        ("localhost:8000@evil.example", False),
        ("", False),
    ],
)
def test_default_hosts_are_loopback_names_and_the_listen_address(
    make_settings: Callable[..., Settings], host: str, allowed: bool
) -> None:
    with TestClient(create_app(make_settings())) as client:
        origin = {"origin": f"http://{host}"} if host else {}
        answer = client.get("/api/repos", headers={"host": host, **origin})
        if allowed:
            assert answer.status_code == 200, answer.text
        else:
            assert answer.status_code == 421, answer.text
            assert answer.json()["error"]["code"] == "misdirected_request"


def test_a_rebound_name_cannot_open_the_stream(make_settings: Callable[..., Settings]) -> None:
    with TestClient(create_app(make_settings())) as client:
        session = create_session(client, client.get("/api/repos").json()["repos"][0]["id"])
        url = f"/ws/sessions/{session['id']}"
        headers = {"host": "evil.example:8000", "origin": "http://evil.example:8000"}
        with (
            client.websocket_connect(url, headers=headers) as ws,
            pytest.raises(WebSocketDisconnect) as closed,
        ):
            ws.receive_text()
        assert closed.value.code == 4403


def test_allowed_hosts_setting(make_settings: Callable[..., Settings]) -> None:
    only = make_settings(ALLOWED_HOSTS="agents.example.com, 10.1.2.3")
    assert only.accepted_hosts() == {"agents.example.com", "10.1.2.3"}
    with TestClient(create_app(only)) as client:
        assert client.get("/api/repos", headers={"host": "agents.example.com"}).status_code == 200
        assert client.get("/api/repos", headers={"host": "10.1.2.3:8000"}).status_code == 200
        assert client.get("/api/repos", headers={"host": "localhost"}).status_code == 421
    assert make_settings(ALLOWED_HOSTS="*").accepted_hosts() is None
    wildcard = make_settings(HOST="0.0.0.0", API_TOKEN=TOKEN)
    assert wildcard.accepted_hosts() is None  # the token guards a server on every interface
    node = make_settings(NODE_URL="http://node-a.internal:8000")
    assert "node-a.internal" in (node.accepted_hosts() or set())


@pytest.mark.parametrize("bad", ["http://a.example", "a.example:80", "a b", "x/y"])
def test_allowed_hosts_refuses_values_that_are_not_host_names(
    make_settings: Callable[..., Settings], bad: str
) -> None:
    from server.settings import SettingsError

    with pytest.raises(SettingsError, match="ALLOWED_HOSTS"):
        make_settings(ALLOWED_HOSTS=bad)


def test_a_real_server_refuses_a_rebound_host(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    evil = {"host": "evil.example:8000", "origin": "http://evil.example:8000"}
    answer = httpx.get(f"{server.url}/api/repos", headers=evil)
    assert answer.status_code == 421 and answer.json()["error"]["code"] == "misdirected_request"
    assert httpx.get(f"{server.url}/api/repos").status_code == 200
    sessions = httpx.get(f"{server.url}/api/sessions").json()["sessions"]
    assert sessions == []
    # The WebSocket handshake by hand: client libraries will not send a foreign Host.
    handshake = (
        f"GET /ws/sessions/{MISSING} HTTP/1.1\r\nHost: evil.example:8000\r\n"
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(handshake)
        received = b""
        while b"\r\n\r\n" not in received or len(received.split(b"\r\n\r\n", 1)[1]) < 4:
            chunk = sock.recv(4096)
            assert chunk, received
            received += chunk
    head, frame = received.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 101")
    assert frame[0] == 0x88 and int.from_bytes(frame[2:4], "big") == 4403  # a close, 4403


@pytest.mark.parametrize("path", ["/", "/app.js", "/api/repos", "/healthz", "/api/nope"])
def test_every_response_carries_the_security_headers(client: TestClient, path: str) -> None:
    headers = client.get(path).headers
    csp = headers["content-security-policy"]
    for directive in (
        "default-src 'self'",
        "script-src 'self'",
        "object-src 'none'",
        "frame-ancestors 'none'",
    ):
        assert directive in csp
    assert "unsafe-inline" not in csp and "*" not in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"


def test_secrets_never_show_in_a_repr_a_log_line_or_an_error(
    make_settings: Callable[..., Settings], caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings(API_TOKEN=TOKEN, CLUSTER_SECRET=SECRET)
    assert TOKEN not in repr(settings) and SECRET not in repr(settings)
    assert TOKEN not in str(settings) and SECRET not in str(settings)
    caplog.set_level(logging.DEBUG)
    with TestClient(create_app(settings)) as client:
        wrong = client.get("/api/repos", headers={"authorization": f"Bearer {TOKEN}x"})
        assert wrong.status_code == 401
        right = client.get("/api/repos", headers={"authorization": f"Bearer {TOKEN}"})
        assert right.status_code == 200
        bodies: list[Any] = [wrong.text, right.text]
    logged = "\n".join(
        f"{r.getMessage()} {r.__dict__}" for r in caplog.records
    )  # message and every extra field
    for text in [logged, *bodies]:
        assert TOKEN not in text and SECRET not in text
