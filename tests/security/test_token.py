"""API.md, Security: the bearer token. A matrix over every route the app serves (from
``app.routes``) × {no token, wrong token, right token}, the header forms, the WebSocket
``?token=``, and the CLI refusing a non-loopback HOST without a token.

Decisions (server/web/security.py): open without a token are /healthz, /readyz,
/openapi.json and the static UI (/ and its files, /{name}); everything else, including
/metrics, needs it.
"""

from __future__ import annotations

import base64
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.conftest import make_git_repo
from tests.helpers import assert_error
from tests.security.support import (
    WS,
    Operation,
    app_for,
    operations,
    route_app,
    ws_close_code,
)

TOKEN = "s3cret-token-0123456789"
OPEN = {"/healthz", "/readyz", "/openapi.json", "/", "/{name}", "/api/login", "/api/logout"}
# Opened only by the secret made for one agent process: every person's token gets 401.
AGENT_ONLY = {"/mcp/sessions/{session_id}"}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    tmp = tmp_path_factory.mktemp("token")
    root = tmp / "workspace"
    make_git_repo(root / "demo")
    with TestClient(app_for(tmp, root, API_TOKEN=TOKEN)) as test_client:
        yield test_client


@pytest.fixture(autouse=True)
def forget_failures(client: TestClient) -> None:
    """These tests send wrong tokens on purpose, more than ten a minute: each starts with
    a clean slate (the limit itself: tests/security/test_users.py)."""
    client.app.state.agent_sessions.signins.forget()  # type: ignore[attr-defined]


OPERATIONS = operations(route_app())
AUTH = {
    "none": {},
    "wrong": {"Authorization": "Bearer not-the-token"},
    "right": {"Authorization": f"Bearer {TOKEN}"},
}


def test_every_route_is_in_the_matrix() -> None:
    templates = {op.template for op in OPERATIONS}
    assert {
        "/healthz",
        "/api/repos",
        "/api/sessions/{session_id}",
        "/ws/sessions/{session_id}",
    } <= templates
    # A route outside /api, /ws and /metrics is open only if it is listed in OPEN on purpose.
    unclassified = {
        t for t in templates - OPEN - AGENT_ONLY if not t.startswith(("/api/", "/ws/", "/metrics"))
    }
    assert unclassified == set(), "decide whether these need the token"


@pytest.mark.parametrize("auth", list(AUTH))
@pytest.mark.parametrize("op", OPERATIONS, ids=str)
def test_token_matrix(client: TestClient, op: Operation, auth: str) -> None:
    headers = AUTH[auth]
    if op.template in AGENT_ONLY:
        response = client.request(op.method, op.path(), headers=headers)
        assert response.status_code == 401, response.text  # no person's token opens it
        return
    needs_token = op.template not in OPEN
    refused = needs_token and auth != "right"
    if op.method == WS:
        code, frames = ws_close_code(client, op.path(), headers)
        if refused:
            assert (code, frames) == (4401, [])
        else:
            assert code != 4401
        return
    response = client.request(op.method, op.path(), headers=headers)
    if refused:
        assert response.status_code == 401, response.text
        assert response.headers["www-authenticate"] == "Bearer"
        if op.method != "HEAD":
            assert_error(response, 401, "unauthorized")
    else:
        assert response.status_code != 401, response.text
        assert "www-authenticate" not in response.headers


@pytest.mark.parametrize(
    ("headers", "ok"),
    [
        ({"Authorization": f"Bearer {TOKEN}"}, True),
        ({"Authorization": f"bearer {TOKEN}"}, True),  # the scheme is case-insensitive
        ({"Authorization": f"Bearer   {TOKEN}  "}, True),
        ({"Authorization": f"Bearer {TOKEN}x"}, False),
        ({"Authorization": f"Bearer {TOKEN[:-1]}"}, False),
        ({"Authorization": f"Bearer {TOKEN.upper()}"}, False),
        ({"Authorization": "Bearer"}, False),
        ({"Authorization": "Bearer "}, False),
        ({"Authorization": TOKEN}, False),
        ({"Authorization": f"Token {TOKEN}"}, False),
        ({"Authorization": "Basic " + base64.b64encode(f"user:{TOKEN}".encode()).decode()}, False),
        ({"X-Api-Token": TOKEN}, False),
    ],
)
def test_header_forms(client: TestClient, headers: dict[str, str], ok: bool) -> None:
    response = client.get("/api/repos", headers=headers)
    assert response.status_code == (200 if ok else 401), response.text


def test_a_non_ascii_token_works_as_utf8_bytes(tmp_path: Path, workspace_root: Path) -> None:
    token = "tøken-ünïcode"
    with TestClient(app_for(tmp_path, workspace_root, API_TOKEN=token)) as utf8_client:
        right = {"Authorization": b"Bearer " + token.encode()}
        assert utf8_client.get("/api/repos", headers=right).status_code == 200
        assert (
            utf8_client.get("/api/repos", headers={"Authorization": b"Bearer t"}).status_code == 401
        )
        from urllib.parse import quote

        code, _ = ws_close_code(
            utf8_client, f"/ws/sessions/00000000-0000-4000-8000-000000000000?token={quote(token)}"
        )
        assert code == 4404


def test_two_authorization_headers_are_refused(client: TestClient) -> None:
    headers = [("authorization", f"Bearer {TOKEN}"), ("authorization", "Bearer other")]
    assert client.get("/api/repos", headers=headers).status_code == 401


def test_query_token_is_for_websockets_only(client: TestClient) -> None:
    from urllib.parse import quote

    assert client.get(f"/api/repos?token={quote(TOKEN)}").status_code == 401
    code, frames = ws_close_code(
        client, f"/ws/sessions/00000000-0000-4000-8000-000000000000?token={quote(TOKEN)}"
    )
    assert code == 4404 and frames == []  # past the token: an unknown session


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("token=wrong", 4401),
        ("token=", 4401),
        (f"token={TOKEN}&token=other", 4401),
        ("tok=x", 4401),
    ],
)
def test_websocket_query_token_refusals(client: TestClient, query: str, code: int) -> None:
    from urllib.parse import quote_plus

    query = query.replace(TOKEN, quote_plus(TOKEN))
    assert ws_close_code(client, f"/ws/sessions/00000000-0000-4000-8000-000000000000?{query}") == (
        code,
        [],
    )


def test_a_refusal_is_a_security_event(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="agent_sessions.security"):
        client.get("/api/sessions", headers={"Authorization": "Bearer nope"})
    [record] = [r for r in caplog.records if getattr(r, "event", None) == "unauthorized"]
    assert record.path == "/api/sessions"  # type: ignore[attr-defined]
    assert "nope" not in record.getMessage() and TOKEN not in str(vars(record))


def test_without_a_token_configured_everything_is_open(
    tmp_path: Path, workspace_root: Path
) -> None:
    with TestClient(app_for(tmp_path, workspace_root)) as open_client:
        assert open_client.get("/api/repos").status_code == 200
        assert open_client.get("/metrics").status_code == 200
        assert (
            open_client.get("/api/repos", headers={"Authorization": "Bearer whatever"}).status_code
            == 200
        )


# -- the command line ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "args"),
    [
        ({"HOST": "0.0.0.0"}, []),
        ({"HOST": "example.com"}, []),
        ({}, ["--host", "0.0.0.0"]),
        ({"API_TOKEN": "   "}, ["--host", "0.0.0.0"]),  # blank is no token
    ],
)
def test_cli_refuses_a_non_loopback_host_without_a_token(
    tmp_path: Path, env: dict[str, str], args: list[str]
) -> None:
    full_env = {k: v for k, v in os.environ.items() if k not in ("API_TOKEN", "HOST")}
    full_env.update(
        {
            "AGENT_WORKSPACE_ROOT": str(tmp_path / "ws"),
            "PORT": "1",
            "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}",
            **env,
        }
    )
    done = subprocess.run(
        [sys.executable, "-m", "server.cli", "serve", *args],
        cwd=tmp_path,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "API_TOKEN" in done.stderr and "loopback" in done.stderr
    assert "Traceback" not in done.stderr
