"""API.md "Users and access": users and tokens over the API, revocation in force at once
(HTTP and open WebSockets), expiry, browsers' sign-in cookie, a signing-in proxy, the
per-user session limit, failed sign-ins slowed, and no secret in any log line or body."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from server.app import create_app
from server.sessions.users import Secret, new_secret
from tests.conftest import make_git_repo
from tests.helpers import assert_error, demo_command
from tests.security.support import make

API_TOKEN = "the-servers-own-token-0123456789"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def app_client(tmp_path: Path) -> Iterator[Any]:
    """``app_client(**settings)``: an entered TestClient on a fresh database."""
    root = tmp_path / "workspace"
    make_git_repo(root / "demo")
    clients: list[TestClient] = []

    def start(**env: str) -> TestClient:
        settings = make(tmp_path, root, AGENT_COMMAND=demo_command(), **env)
        client = TestClient(create_app(settings))
        client.__enter__()
        clients.append(client)
        return client

    yield start
    for client in clients:
        client.__exit__(None, None, None)


def first_admin(client: TestClient, name: str = "root") -> tuple[str, str]:
    state = client.app.state.agent_sessions  # type: ignore[attr-defined]
    assert client.portal is not None
    user, secret = client.portal.call(state.users.add_user, name, "admin")
    return user.id, str(secret)


def test_without_users_or_token_the_server_is_open_as_before(app_client: Any) -> None:
    client = app_client()
    assert client.get("/api/repos").status_code == 200
    assert client.get("/api/me").json() == {"id": None, "name": None, "role": "admin"}


def test_users_and_tokens_over_the_api(app_client: Any, caplog: pytest.LogCaptureFixture) -> None:
    client = app_client(API_TOKEN=API_TOKEN)
    with caplog.at_level(logging.DEBUG):
        made = client.post(
            "/api/users", json={"name": "ann", "role": "member"}, headers=bearer(API_TOKEN)
        )
        assert made.status_code == 201, made.text
        user, token = made.json()["user"], made.json()["token"]
        assert (
            user["name"] == "ann"
            and user["role"] == "member"
            and set(user) == {"id", "name", "role", "createdAt"}
        )
        assert token.startswith("as_") and len(token) >= 3 + 43
        assert client.get("/api/me", headers=bearer(token)).json() == {
            "id": user["id"],
            "name": "ann",
            "role": "member",
        }
        again = client.post(
            "/api/users", json={"name": "ann", "role": "member"}, headers=bearer(API_TOKEN)
        )
        assert_error(again, 409, "user_exists")
        bad_role = client.post(
            "/api/users", json={"name": "bob", "role": "owner"}, headers=bearer(API_TOKEN)
        )
        assert_error(bad_role, 422, "validation_error")
        later = (datetime.now(UTC) + timedelta(days=1)).isoformat().replace("+00:00", "Z")
        second = client.post(
            f"/api/users/{user['id']}/tokens",
            json={"name": "laptop", "expiresAt": later},
            headers=bearer(token),
        )
        assert second.status_code == 201, second.text
        past = client.post(
            f"/api/users/{user['id']}/tokens",
            json={"expiresAt": "2001-01-01T00:00:00Z"},
            headers=bearer(token),
        )
        assert_error(past, 422, "validation_error")
        listed = client.get(f"/api/users/{user['id']}/tokens", headers=bearer(token)).json()[
            "tokens"
        ]
        assert {t["name"] for t in listed} == {"initial", "laptop"}
        assert all(set(t) == {"id", "name", "createdAt", "expiresAt", "lastUsedAt"} for t in listed)
        assert client.get("/api/users", headers=bearer(token)).status_code == 403
        users = client.get("/api/users", headers=bearer(API_TOKEN)).json()["users"]
        assert [u["name"] for u in users] == ["ann"]
        # revoked: the very next request is refused
        assert (
            client.delete(f"/api/tokens/{second.json()['id']}", headers=bearer(token)).status_code
            == 204
        )
        assert_error(
            client.get("/api/me", headers=bearer(second.json()["token"])), 401, "unauthorized"
        )
        # removed: their tokens are gone with them
        assert (
            client.delete(f"/api/users/{user['id']}", headers=bearer(API_TOKEN)).status_code == 204
        )
        assert_error(client.get("/api/me", headers=bearer(token)), 401, "unauthorized")
    everything = "\n".join(str(vars(r)) + r.getMessage() for r in caplog.records)
    for secret in (token, second.json()["token"], API_TOKEN):
        assert secret not in everything


def test_an_expired_token_is_refused_and_its_websocket_closed(app_client: Any) -> None:
    client = app_client()
    first_admin(client)
    state = client.app.state.agent_sessions
    user, _ = client.portal.call(state.users.add_user, "eve", "viewer")
    soon = datetime.now(UTC) + timedelta(seconds=1.5)
    token, secret = client.portal.call(state.users.make_token, user.id, None, soon)
    unknown = "00000000-0000-4000-8000-000000000000"
    with client.websocket_connect(f"/ws/sessions/{unknown}?token={secret}") as ws:
        with pytest.raises(WebSocketDisconnect) as closed:
            ws.receive_json()
    assert closed.value.code == 4404  # it was valid: the session is what is missing
    assert client.get("/api/me", headers=bearer(secret)).status_code == 200
    deadline = time.monotonic() + 10
    while client.get("/api/me", headers=bearer(secret)).status_code == 200:
        assert time.monotonic() < deadline, "the token never expired"
        time.sleep(0.05)
    assert_error(client.get("/api/me", headers=bearer(secret)), 401, "unauthorized")


def member_with_a_session(
    client: TestClient, name: str, **body: Any
) -> tuple[str, dict[str, Any], str]:
    """(admin token, the new member as made, the id of a session the member created)."""
    _, admin = first_admin(client)
    repo = client.get("/api/repos", headers=bearer(admin)).json()["repos"][0]["id"]
    made = client.post(
        "/api/users", json={"name": name, "role": "member"}, headers=bearer(admin)
    ).json()
    created = client.post(
        "/api/sessions", json={"repoId": repo, **body}, headers=bearer(made["token"])
    )
    assert created.status_code == 201, created.text
    return admin, made, str(created.json()["id"])


def assert_closed_within_a_second(
    client: TestClient, session_id: str, token: str, end: Callable[[], None]
) -> None:
    """A WebSocket opened with ``token`` closes with 4401 within a second of ``end()``."""
    with client.websocket_connect(f"/ws/sessions/{session_id}?token={token}") as ws:
        while ws.receive_json()["type"] != "live":
            pass
        end()
        ended_at = time.monotonic()
        with pytest.raises(WebSocketDisconnect) as closed:
            while True:
                ws.receive_json()
    assert closed.value.code == 4401
    assert time.monotonic() - ended_at < 1.0
    assert_error(client.get("/api/me", headers=bearer(token)), 401, "unauthorized")


def test_revoking_a_token_closes_its_open_websocket_at_once(app_client: Any) -> None:
    client = app_client()
    admin, made, session_id = member_with_a_session(client, "mia")
    tokens = client.get(f"/api/users/{made['user']['id']}/tokens", headers=bearer(admin)).json()

    def revoke() -> None:
        revoked = client.delete(f"/api/tokens/{tokens['tokens'][0]['id']}", headers=bearer(admin))
        assert revoked.status_code == 204

    assert_closed_within_a_second(client, session_id, made["token"], revoke)


def test_a_user_removed_by_the_cli_loses_its_open_websocket_within_a_second(
    app_client: Any, tmp_path: Path
) -> None:
    """``agent-sessions users remove`` runs beside the server on the same database (a
    SQLite file here: no cluster notice): the server sees the rows gone and closes the
    user's WebSocket with 4401 within a second."""
    import os
    import subprocess
    import sys

    from tests.conftest import settings_env

    client = app_client()
    _, made, session_id = member_with_a_session(client, "ria")
    env = {**os.environ, **settings_env(tmp_path, tmp_path / "workspace")}

    def remove() -> None:
        removed = subprocess.run(
            [sys.executable, "-m", "server.cli", "users", "remove", "ria"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert removed.returncode == 0, removed.stderr

    assert_closed_within_a_second(client, session_id, made["token"], remove)


def test_browser_sign_in_cookie(app_client: Any) -> None:
    client = app_client()
    _, admin = first_admin(client)
    assert_error(client.get("/api/me"), 401, "unauthorized")
    assert_error(client.post("/api/login", json={"token": "as_wrong"}), 401, "unauthorized")
    signed = client.post("/api/login", json={"token": admin})
    assert signed.status_code == 204
    cookie = signed.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    assert "Secure" not in cookie  # plain HTTP here; over HTTPS it is Secure
    assert admin not in cookie  # the cookie holds a sign-in of its own, never the token
    assert client.get("/api/me").json()["name"] == "root"
    assert client.post("/api/logout").status_code == 204
    assert_error(client.get("/api/me"), 401, "unauthorized")
    secure = client.post("https://localhost/api/login", json={"token": admin})
    assert "Secure" in secure.headers.get("set-cookie", ""), (secure.status_code, secure.text)


def test_failed_sign_ins_are_logged_and_slowed(
    app_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    client = app_client()
    _, admin = first_admin(client)
    with caplog.at_level(logging.WARNING, logger="agent_sessions.security"):
        for _ in range(10):
            assert client.get("/api/me", headers=bearer("as_guess")).status_code == 401
        refused = client.post("/api/login", json={"token": admin})
    assert_error(refused, 429, "too_many_failures")
    assert int(refused.headers["retry-after"]) > 0
    assert client.get("/api/me", headers=bearer(admin)).status_code == 429  # right ones too
    failures = [r for r in caplog.records if getattr(r, "event", None) == "signin_failed"]
    assert len(failures) == 10 and failures[0].client == "testclient"  # type: ignore[attr-defined]
    assert all("as_guess" not in str(vars(r)) for r in caplog.records)


def test_a_signing_in_proxy_is_believed_only_with_its_secret(app_client: Any) -> None:
    client = app_client(
        AUTH_PROXY_HEADER="X-Forwarded-User",
        AUTH_PROXY_SECRET="proxy-proof",
        AUTH_PROXY_CREATE_USERS="false",
    )
    _, admin = first_admin(client, "boss")
    proven = {"X-Forwarded-User": "boss", "X-Auth-Proxy-Secret": "proxy-proof"}
    assert client.get("/api/me", headers=proven).json()["name"] == "boss"
    assert_error(client.get("/api/me", headers={"X-Forwarded-User": "boss"}), 401, "unauthorized")
    wrong = {"X-Forwarded-User": "boss", "X-Auth-Proxy-Secret": "guess"}
    assert_error(client.get("/api/me", headers=wrong), 401, "unauthorized")
    stranger = {"X-Forwarded-User": "newbie", "X-Auth-Proxy-Secret": "proxy-proof"}
    assert_error(client.get("/api/me", headers=stranger), 403, "forbidden")
    creating = app_client(
        AUTH_PROXY_HEADER="X-Forwarded-User",
        AUTH_PROXY_SECRET="proxy-proof",
        AUTH_PROXY_CREATE_USERS="true",
    )
    assert creating.get("/api/me", headers=stranger).json()["role"] == "member"


def test_max_sessions_per_user(app_client: Any) -> None:
    client = app_client(MAX_SESSIONS_PER_USER="1")
    _, admin = first_admin(client)
    repo = client.get("/api/repos", headers=bearer(admin)).json()["repos"][0]["id"]
    member = client.post(
        "/api/users", json={"name": "max", "role": "member"}, headers=bearer(admin)
    ).json()["token"]
    first = client.post("/api/sessions", json={"repoId": repo}, headers=bearer(member))
    assert first.status_code == 201, first.text
    second = client.post("/api/sessions", json={"repoId": repo}, headers=bearer(member))
    assert_error(second, 429, "user_session_limit_reached")
    assert second.headers["retry-after"] == "60"
    # another user is not counted against max's limit
    assert (
        client.post("/api/sessions", json={"repoId": repo}, headers=bearer(admin)).status_code
        == 201
    )
    assert (
        client.post(
            f"/api/sessions/{first.json()['id']}/complete", headers=bearer(member)
        ).status_code
        == 200
    )
    assert (
        client.post("/api/sessions", json={"repoId": repo}, headers=bearer(member)).status_code
        == 201
    )


def test_secrets_never_show_in_a_repr() -> None:
    secret = new_secret()
    assert isinstance(secret, Secret) and secret.startswith("as_")
    assert str(secret) not in repr(secret) and str(secret) not in repr([secret])
    from server.settings import load_settings

    settings = load_settings({"API_TOKEN": API_TOKEN, "AUTH_PROXY_SECRET": "proof"}, env_file=None)
    assert API_TOKEN not in repr(settings) and "proof" not in repr(settings)


def test_who_answered_and_usage_by_user(app_client: Any) -> None:
    """The answer to a permission request names who gave it; the statistics count runs
    by the user who prompted them."""
    from tests.helpers import is_type, run_ended, wait_for_message

    client = app_client()
    _, made, sid = member_with_a_session(client, "pat")
    me, member = made["user"], bearer(made["token"])
    run = client.post(
        f"/api/sessions/{sid}/prompt", json={"text": "write notes.txt hi"}, headers=member
    ).json()["runId"]
    client.headers.update(member)  # the helpers' reads
    asked = wait_for_message(client, sid, is_type("permission", outcome=None))["content"]
    answer = f"/api/sessions/{sid}/permissions/{asked['requestId']}"
    assert client.post(answer, json={"optionId": "allow"}, headers=member).status_code == 200
    wait_for_message(client, sid, run_ended(run))
    decided = wait_for_message(
        client, sid, lambda m: m["content"]["type"] == "permission" and m["content"]["outcome"]
    )
    assert decided["content"]["by"] == {"id": me["id"], "name": "pat"}
    stats = client.get("/api/stats", params={"groupBy": "user"}, headers=member).json()
    assert [(b["key"], b["runs"]) for b in stats["buckets"]] == [(me["id"], 1)]


def test_a_commit_and_a_merge_name_who_made_them(app_client: Any, tmp_path: Path) -> None:
    """``by: {id, name}`` on the ``review`` messages a member's commit and merge leave,
    beside the answers' own ``by``."""
    from tests.server.test_history import run_turn
    from tests.workspaces.support import git

    demo = tmp_path / "workspace" / "demo"  # app_client's repository: a first commit
    git(demo, "add", "-A")
    git(demo, "commit", "-q", "-m", "initial")
    client = app_client()
    _, made, sid = member_with_a_session(client, "pat", isolation="worktree")
    me, member = made["user"], bearer(made["token"])
    client.headers.update(member)
    assert run_turn(client, sid, "write notes.txt hello", answer="allow").status == "completed"
    committed = client.post(f"/api/sessions/{sid}/commit", json={"message": "notes"})
    merged = client.post(f"/api/sessions/{sid}/merge", json={})
    assert committed.status_code == 201 and merged.status_code == 200, merged.text
    who = {"id": me["id"], "name": "pat"}
    assert committed.json()["by"] == who and merged.json()["by"] == who
    messages = client.get(f"/api/sessions/{sid}/messages").json()["messages"]
    recorded = [
        (m["content"]["action"], m["content"]["by"])
        for m in messages
        if m["content"]["type"] == "review"
    ]
    assert recorded == [("commit", who), ("merge", who)]
