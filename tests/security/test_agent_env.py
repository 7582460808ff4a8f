"""Agents (and their terminals) get an allow-listed environment plus what their agent
configuration names; no server variable (API_TOKEN, DATABASE_URL, every other setting)
and no other secret of the server's environment reaches them. Checked end to end: the
demo agent reports the names of its variables (``env-names``), a terminal runs ``env``."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from server.settings import Settings
from tests.conftest import LiveServer
from tests.helpers import create_session, messages, prompt, run_ended, wait_for_message
from tests.security.support import app_for

ALLOW_LIST = {"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "TMPDIR", "USER"}
OWNER = "AGENT_SESSIONS_OWNER"
SESSION = "AGENT_SESSIONS_SESSION"  # which session's agent: the orphan sweep's marker
SERVER_SECRETS = {
    "API_TOKEN": "tok-123456",
    "DATABASE_URL": "postgresql+asyncpg://user:pw@db/x",
    "CLUSTER_SECRET": "cluster-secret",
    "AWS_SECRET_ACCESS_KEY": "aws",
    "OPENAI_API_KEY": "sk-test",
    "GITHUB_TOKEN": "ghp_test",
    "SSH_AUTH_SOCK": "/tmp/agent.sock",
    "PGPASSWORD": "pg-password",
}


def agents_file(tmp_path: Path) -> Path:
    path = tmp_path / "agents.toml"
    path.write_text(
        f'[agents.configured]\ncommand = "{sys.executable} -m agent_bridge.demo_agent"\n'
        'env = {EXTRA_CONFIGURED = "yes", LANG = "C.UTF-8"}\n'
    )
    return path


def reply_names(text: str, marker: str = "env: ") -> set[str]:
    line = next(line for line in text.splitlines() if marker in line)
    return set(line.split(marker, 1)[1].replace(" Done.", "").split())


def check(names: set[str], *, configured: bool) -> None:
    expected_extra = {"EXTRA_CONFIGURED"} if configured else set()
    assert "PATH" in names and OWNER in names and SESSION in names
    assert names <= ALLOW_LIST | expected_extra | {OWNER, SESSION}, names - ALLOW_LIST
    assert expected_extra <= names
    assert not names & set(SERVER_SECRETS)
    assert not names & set(Settings.variables()), "a server setting reached the agent"


@pytest.mark.parametrize("agent", ["default", "configured"])
def test_agent_and_terminal_environment(
    tmp_path: Path, workspace_root: Path, monkeypatch: pytest.MonkeyPatch, agent: str
) -> None:
    for name, value in SERVER_SECRETS.items():
        monkeypatch.setenv(name, value)
    for name in Settings.variables():
        monkeypatch.setenv(name, "server-only")
    app = app_for(tmp_path, workspace_root, AGENTS_FILE=str(agents_file(tmp_path)))
    with TestClient(app) as client:
        repo_id = client.get("/api/repos").json()["repos"][0]["id"]
        session = create_session(client, repo_id, agentId=agent)
        run_id = prompt(client, session["id"], "env-names")
        wait_for_message(client, session["id"], run_ended(run_id))
        [reply] = [
            m
            for m in messages(client, session["id"], partial="false", role="agent", type="text")
            if m["runId"] == run_id
        ]
        check(reply_names(reply["content"]["text"]), configured=agent == "configured")
        run_id = prompt(client, session["id"], "terminal env")
        wait_for_message(client, session["id"], run_ended(run_id))
        tool = [
            m["content"]
            for m in messages(client, session["id"])
            if m["content"]["type"] == "tool" and m["runId"] == run_id
        ][-1]
        assert tool["status"] == "completed", tool
        output = tool["result"]["output"]
        check(
            {line.split("=", 1)[0] for line in output.splitlines() if "=" in line},
            configured=agent == "configured",
        )
        for value in SERVER_SECRETS.values():
            assert value not in output
        client.delete(f"/api/sessions/{session['id']}")


def test_agent_environment_on_a_live_server(
    live_server: Callable[..., LiveServer], tmp_path: Path
) -> None:
    token = "live-token-abcdef"
    secrets = {k: v for k, v in SERVER_SECRETS.items() if k not in ("API_TOKEN", "DATABASE_URL")}
    server = live_server(API_TOKEN=token, AGENTS_FILE=str(agents_file(tmp_path)), **secrets)
    assert server.env["API_TOKEN"] == token and "DATABASE_URL" in server.env
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as http:
        repo_id = http.get("/api/repos").json()["repos"][0]["id"]
        created = http.post("/api/sessions", json={"repoId": repo_id, "agentId": "configured"})
        assert created.status_code == 201, created.text
        session_id = created.json()["id"]
        run_id = http.post(f"/api/sessions/{session_id}/prompt", json={"text": "env-names"}).json()[
            "runId"
        ]
        deadline = time.monotonic() + 30
        while True:  # poll the stored log, with a deadline
            stored = http.get(
                f"/api/sessions/{session_id}/messages", params={"partial": "false"}
            ).json()["messages"]
            ended = [
                m
                for m in stored
                if m["content"]["type"] == "run"
                and m["content"]["runId"] == run_id
                and m["content"]["status"] != "running"
            ]
            if ended:
                break
            assert time.monotonic() < deadline, stored[-3:]
            time.sleep(0.05)
        [reply] = [
            m
            for m in stored
            if m["role"] == "agent" and m["content"]["type"] == "text" and m["runId"] == run_id
        ]
        check(reply_names(reply["content"]["text"]), configured=True)
        http.delete(f"/api/sessions/{session_id}")
