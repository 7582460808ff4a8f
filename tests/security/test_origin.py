"""API.md, Security: Origin. WebSocket handshakes (and /api requests) from an origin that
is neither the server's own nor in ALLOWED_ORIGINS are refused: 4403 / 403
``forbidden_origin``; no wildcard (or any) CORS on the API.

Decisions (server/web/security.py): the origin is compared as ``scheme://host:port``; scheme
and host case-insensitively, a default port equals no port (RFC 6454: browsers send it
that way, so ``HTTP://HOST`` is the same origin, not a look-alike). Everything else is a
different origin: ``null``, https for an http server, another port, a trailing dot,
suffix and user-info tricks, paths, several origins in one header. No Origin at all is a
non-browser client (the token governs those).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import pytest
from starlette.testclient import TestClient
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.conftest import LiveServer, make_git_repo
from tests.helpers import assert_error
from tests.security.support import (
    UNKNOWN_ID,
    WS,
    app_for,
    operations,
    route_app,
    ws_close_code,
)

ALLOWED = "https://ui.example.com,http://localhost:5173/"
WS_PATH = f"/ws/sessions/{UNKNOWN_ID}"

ORIGINS: list[tuple[str | None, bool]] = [
    (None, True),
    ("http://localhost", True),
    ("http://localhost:80", True),
    ("HTTP://LOCALHOST", True),
    ("https://localhost", False),
    ("https://localhost:80", False),
    ("http://localhost:8080", False),
    ("http://localhost:0", False),
    ("http://localhost:99999", False),
    ("http://localhost.", False),
    ("http://localhost.:80", False),
    ("http://localhost.evil.com", False),
    ("http://localhost:80.evil.com", False),
    ("http://evil-localhost", False),
    ("http://evillocalhost", False),
    ("http://localhost@evil.com", False),
    ("http://evil.com@localhost", False),
    ("http://localhost/", False),
    ("http://localhost/path", False),
    ("http://localhost?x", False),
    ("http://localhost#x", False),
    (" http://localhost", True),  # surrounding blanks are not part of the value (RFC 9110)
    ("http://localhost, http://evil.com", False),
    ("http://localhost http://evil.com", False),
    ("null", False),
    ("", False),
    ("localhost", False),
    ("//localhost", False),
    ("ws://localhost", False),
    ("file://", False),
    ("chrome-extension://abcdef", False),
    ("http://evil.com", False),
    ("https://ui.example.com", True),
    ("https://ui.example.com:443", True),
    ("https://UI.Example.COM", True),
    ("http://ui.example.com", False),
    ("https://ui.example.com:8443", False),
    ("https://ui.example.com.evil.com", False),
    ("https://evil.ui.example.com", False),
    ("https://ui.example.co", False),
    ("http://localhost:5173", True),
    ("http://localhost:5174", False),
    ("http://127.0.0.1:5173", False),
    ("http://127.0.0.1", False),  # the same machine under another name: another origin
]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    tmp = tmp_path_factory.mktemp("origin")
    root = tmp / "workspace"
    make_git_repo(root / "demo")
    with TestClient(app_for(tmp, root, ALLOWED_ORIGINS=ALLOWED)) as test_client:
        yield test_client


def _headers(origin: str | None) -> dict[str, str]:
    return {} if origin is None else {"Origin": origin}


@pytest.mark.parametrize(("origin", "allowed"), ORIGINS, ids=[repr(o) for o, _ in ORIGINS])
def test_websocket_origin(client: TestClient, origin: str | None, allowed: bool) -> None:
    code, frames = ws_close_code(client, WS_PATH, _headers(origin))
    assert frames == []
    assert code == (4404 if allowed else 4403)  # 4404: past the origin check, an unknown session


@pytest.mark.parametrize(("origin", "allowed"), ORIGINS, ids=[repr(o) for o, _ in ORIGINS])
def test_api_origin(client: TestClient, origin: str | None, allowed: bool) -> None:
    response = client.post("/api/repos", json={"path": "missing"}, headers=_headers(origin))
    if allowed:
        assert_error(response, 422, "validation_error")
    else:
        assert_error(response, 403, "forbidden_origin")


def test_two_origin_headers_are_refused(client: TestClient) -> None:
    headers = [("origin", "http://localhost"), ("origin", "http://localhost")]
    assert_error(client.get("/api/repos", headers=headers), 403, "forbidden_origin")


def test_a_forbidden_origin_is_a_security_event(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="agent_sessions.security"):
        ws_close_code(client, WS_PATH, {"Origin": "http://evil.com"})
    [record] = [r for r in caplog.records if getattr(r, "event", None) == "forbidden_origin"]
    assert record.origin == "http://evil.com" and record.path == WS_PATH  # type: ignore[attr-defined]


def test_a_session_stream_opens_from_the_own_origin(client: TestClient) -> None:
    repo_id = client.get("/api/repos").json()["repos"][0]["id"]
    session = client.post("/api/sessions", json={"repoId": repo_id}).json()
    try:
        code, frames = ws_close_code(
            client, f"/ws/sessions/{session['id']}", {"Origin": "http://localhost"}
        )
        assert code == 1000 and frames[0]["type"] == "hello" and frames[-1]["type"] == "live"
        code, frames = ws_close_code(
            client, f"/ws/sessions/{session['id']}", {"Origin": "http://evil.com"}
        )
        assert (code, frames) == (4403, [])
    finally:
        client.delete(f"/api/sessions/{session['id']}")


# -- no CORS ----------------------------------------------------------------------------


@pytest.mark.parametrize("op", [op for op in operations(route_app()) if op.method != WS], ids=str)
def test_no_cors_headers_on_any_route(client: TestClient, op: object) -> None:
    path = op.path()  # type: ignore[attr-defined]
    for origin in ("http://evil.com", "http://localhost", "null"):
        preflight = client.options(
            path,
            headers={
                "Origin": origin,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization",
            },
        )
        actual = client.request(op.method, path, headers={"Origin": origin})  # type: ignore[attr-defined]
        for response in (preflight, actual):
            assert not any(h.lower().startswith("access-control-") for h in response.headers), (
                response.headers
            )


# -- on a real uvicorn ------------------------------------------------------------------


def _live_origins(port: int) -> list[tuple[str | None, bool]]:
    own = f"127.0.0.1:{port}"
    return [
        (None, True),
        (f"http://{own}", True),
        (f"HTTP://{own.upper()}", True),
        (f"http://{own}.evil.com", False),
        (f"http://127.0.0.1:{port + 1}", False),
        (f"https://{own}", False),
        (f"http://127.0.0.1.:{port}", False),
        (f"http://localhost:{port}", False),  # another host name is another origin
        (f"http://{own}@evil.com", False),
        ("null", False),
        ("https://ui.example.com", True),
        ("https://ui.example.com.evil.com", False),
    ]


def test_origins_on_a_live_server(live_server: Callable[..., LiveServer]) -> None:
    server = live_server(ALLOWED_ORIGINS=ALLOWED)
    results = {}
    for origin, allowed in _live_origins(server.port):
        kwargs = {} if origin is None else {"origin": origin}
        with connect(f"{server.ws_url}{WS_PATH}", open_timeout=10, **kwargs) as ws:  # type: ignore[arg-type]
            try:
                frame = ws.recv(timeout=10)
            except ConnectionClosed as exc:
                assert exc.rcvd is not None
                results[origin] = exc.rcvd.code
            else:  # pragma: no cover - a frame before the close is a failure
                results[origin] = f"data: {frame!r}"
        assert results[origin] == (4404 if allowed else 4403), (origin, results[origin])
    import httpx

    response = httpx.options(
        f"{server.url}/api/repos",
        headers={"Origin": "http://evil.com", "Access-Control-Request-Method": "DELETE"},
        timeout=10,
    )
    assert "access-control-allow-origin" not in response.headers
    response = httpx.get(
        f"{server.url}/api/repos", headers={"Origin": "http://evil.com"}, timeout=10
    )
    assert_error(response, 403, "forbidden_origin")
    assert "access-control-allow-origin" not in response.headers
