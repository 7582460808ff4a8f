"""Admission limit and agent start (issue: lifecycle, points 1-2)."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import httpx
import pytest
from starlette.testclient import TestClient

from server.app import create_app
from tests.helpers import DEMO, create_session, demo_command, messages


def test_limit_refuses_with_429_and_frees_slot_on_complete(make_settings, caplog) -> None:
    caplog.set_level(logging.INFO, logger="agent_sessions.hub")
    with TestClient(create_app(make_settings(MAX_CONCURRENT_SESSIONS=2))) as client:
        repo = client.get("/api/repos").json()["repos"][0]["id"]
        first = create_session(client, repo)
        create_session(client, repo)
        refused = client.post("/api/sessions", json={"repoId": repo})
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "60"
        error = refused.json()["error"]
        assert error["code"] == "session_limit_reached"
        assert "2" in error["message"] and "try again" in error["message"]
        assert error["details"] == {"limit": 2}
        assert client.post(f"/api/sessions/{first['id']}/complete").status_code == 200
        create_session(client, repo)
    counts = [
        r.getMessage() for r in caplog.records if r.getMessage().startswith("active sessions:")
    ]
    assert counts[:3] == [
        "active sessions: 1 of 2 (session created)",
        "active sessions: 2 of 2 (session created)",
        "active sessions: 1 of 2 (session completed: user_request)",
    ]


@pytest.mark.anyio
async def test_1000_concurrent_creates_never_exceed_the_limit(live_server) -> None:
    server = live_server(MAX_CONCURRENT_SESSIONS=3)
    # No keep-alive: a pooled connection the server closes as idle under load would be
    # a client-side ReadError, not an answer of the server.
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=0)
    # 1000 requests queue for 64 connections on the client side: only the server's
    # answer has a deadline, not the wait for a free connection (pool=None).
    timeout = httpx.Timeout(60, pool=None)
    async with httpx.AsyncClient(base_url=server.url, limits=limits, timeout=timeout) as http:
        repo = (await http.get("/api/repos")).json()["repos"][0]["id"]
        statuses: list[int] = []
        odd: list[str] = []

        async def create() -> None:
            response = await http.post("/api/sessions", json={"repoId": repo})
            statuses.append(response.status_code)
            if response.status_code not in (201, 429):
                odd.append(response.text)

        async with anyio.create_task_group() as tg:
            for _ in range(1000):
                tg.start_soon(create)
        assert sorted(set(statuses)) == [201, 429], odd[:3]
        assert statuses.count(201) == 3
        active = (await http.get("/api/sessions", params={"status": "active"})).json()
        assert active["total"] == 3


def test_start_failure_is_502_stored_as_error_and_frees_the_slot(
    make_settings, tmp_path: Path
) -> None:
    agents = tmp_path / "agents.toml"
    agents.write_text(f'[agents.good]\ncommand = "{DEMO}"\n')
    settings = make_settings(
        MAX_CONCURRENT_SESSIONS=1,
        AGENTS_FILE=agents,
        AGENT_COMMAND=demo_command(DEMO_AGENT_MODE="fail-start"),
    )
    with TestClient(create_app(settings)) as client:
        repo = client.get("/api/repos").json()["repos"][0]["id"]
        failed = client.post("/api/sessions", json={"repoId": repo})
        assert failed.status_code == 502
        error = failed.json()["error"]
        assert error["code"] == "agent_start_failed"
        assert error["details"]["exitCode"] == 2
        assert "cannot start (fail-start)" in error["details"]["stderrTail"]
        assert "code 2" in error["message"]
        # The message itself says what the agent wrote last (API.md, 502), as does details.
        assert "cannot start (fail-start)" in error["message"]
        assert any("cannot start (fail-start)" in line for line in error["details"]["stderr"])
        sessions = client.get("/api/sessions", params={"status": "error"}).json()["sessions"]
        assert len(sessions) == 1
        status = [
            m["content"]
            for m in messages(client, sessions[0]["id"])
            if m["content"]["type"] == "status"
        ]
        assert status[-1]["status"] == "error" and status[-1]["reason"] == "agent_start_failed"
        # The slot is free again: the good agent starts.
        create_session(client, repo, agentId="good")


@pytest.mark.parametrize(
    ("command", "env", "needle"),
    [
        (demo_command(DEMO_AGENT_MODE="error-new-session"), {}, "session/new with error -32603"),
        (
            demo_command(DEMO_AGENT_MODE="slow-start:30"),
            {"AGENT_START_TIMEOUT": "0.5"},
            "did not answer initialize within 0.5 s",
        ),
        ("/nonexistent/agent --acp", {}, "could not be spawned"),
        (demo_command(DEMO_AGENT_REQUIRE_AUTH="demo-key"), {}, "requires authentication"),
    ],
    ids=["error-answer", "timeout", "missing-binary", "auth-required"],
)
def test_start_failures(make_settings, command: str, env: dict[str, str], needle: str) -> None:
    with TestClient(create_app(make_settings(AGENT_COMMAND=command, **env))) as client:
        repo = client.get("/api/repos").json()["repos"][0]["id"]
        failed = client.post("/api/sessions", json={"repoId": repo})
        assert failed.status_code == 502, failed.text
        assert needle in failed.json()["error"]["message"]
        assert client.get("/api/sessions", params={"status": "active"}).json()["total"] == 0


def test_authenticate_with_configured_method(make_settings, tmp_path: Path) -> None:
    agents = tmp_path / "agents.toml"
    agents.write_text(
        f"[agents.keyed]\ncommand = "
        f'"{demo_command(DEMO_AGENT_REQUIRE_AUTH="demo-key")}"\nauthMethod = "demo-key"\n'
    )
    with TestClient(create_app(make_settings(AGENTS_FILE=agents))) as client:
        repo = client.get("/api/repos").json()["repos"][0]["id"]
        session = create_session(client, repo, agentId="keyed")
        assert session["status"] == "active" and session["agentId"] == "keyed"
