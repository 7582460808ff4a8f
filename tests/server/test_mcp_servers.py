"""API.md, Agent controls, MCP servers: defined in AGENTS_FILE, an agent's defaults and a
session's additions passed in session/new and session/load, http/sse ones only to agents
whose mcpCapabilities allow them; every rejection; env and headers values never in an
answer or a log; a stdio server the agent started is gone when the session ends. Against
a scripted agent (tests/server/mcp_agent.py, a real subprocess) through the TestClient."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from server.app import create_app
from server.sessions.agents.config import load_agents
from server.settings import Settings, SettingsError
from tests.helpers import pid_gone, prompt, run_ended, wait_for_message
from tests.server.test_api_repos import assert_error

AGENT = Path(__file__).with_name("mcp_agent.py")
STDIO_SECRET = "stdio-secret-value-7f3a"
HEADER_SECRET = "Bearer header-secret-value-91c2"
SERVER = f'command = "{sys.executable}"\nargs = ["-c", "import sys; sys.stdin.read()"]\n'


def agents_toml(log: Path) -> str:
    agent = f'command = "{sys.executable} {AGENT}"\n'
    return (
        f'[mcpServers.files]\n{SERVER}env = {{MCP_TOKEN = "{STDIO_SECRET}"}}\n'
        f"[mcpServers.notes]\n{SERVER}"
        '[mcpServers.web]\nurl = "https://mcp.example.test/mcp"\n'
        f'headers = {{Authorization = "{HEADER_SECRET}"}}\n'
        '[mcpServers.events]\ntype = "sse"\nurl = "https://mcp.example.test/sse"\n'
        f'[agents.plain]\n{agent}mcpServers = ["files"]\nenv = {{MCP_AGENT_LOG = "{log}"}}\n'
        f"[agents.webby]\n{agent}"
        f'env = {{MCP_AGENT_LOG = "{log}", MCP_AGENT_CAPS = "http"}}\n'
    )


@pytest.fixture
def agent_log(tmp_path: Path) -> Path:
    return tmp_path / "mcp-agent.jsonl"


@pytest.fixture
def client(
    tmp_path: Path, agent_log: Path, make_settings: Callable[..., Settings]
) -> Iterator[TestClient]:
    path = tmp_path / "agents.toml"
    path.write_text(agents_toml(agent_log))
    with TestClient(create_app(make_settings(AGENTS_FILE=str(path)))) as test_client:
        yield test_client


def calls(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def create(client: TestClient, **body: Any) -> Any:
    repos = client.get("/api/repos").json()["repos"]
    repo_id = next(r["id"] for r in repos if r["name"] == "demo")
    return client.post("/api/sessions", json={"repoId": repo_id, **body})


def session_count(client: TestClient) -> int:
    return int(client.get("/api/sessions").json()["total"])


def wait_gone(pid: int) -> bool:
    deadline = time.monotonic() + 10
    while not pid_gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pid_gone(pid)


def test_listings_name_servers_without_secrets(client: TestClient) -> None:
    listed = client.get("/api/mcp-servers")
    assert listed.status_code == 200
    assert listed.json() == {
        "mcpServers": [
            {"name": "files", "transport": "stdio"},
            {"name": "notes", "transport": "stdio"},
            {"name": "web", "transport": "http"},
            {"name": "events", "transport": "sse"},
        ]
    }
    agents = {a["id"]: a for a in client.get("/api/agents").json()["agents"]}
    assert agents["plain"]["mcpServers"] == ["files"]
    assert agents["webby"]["mcpServers"] == []
    assert agents["default"]["mcpServers"] == []
    for body in (listed.text, client.get("/api/agents").text):
        assert STDIO_SECRET not in body and "header-secret" not in body


def test_passed_in_new_and_load_and_reaped(
    client: TestClient, agent_log: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    response = create(client, agentId="plain", mcpServers=["notes", "notes"])
    assert response.status_code == 201, response.text
    session = response.json()
    sid = session["id"]
    assert session["controls"]["mcpServers"] == ["files", "notes"]
    [new] = calls(agent_log)
    assert new["method"] == "session/new"
    assert [s["name"] for s in new["mcpServers"]] == ["files", "notes"]
    files = new["mcpServers"][0]
    assert files == {
        "name": "files",
        "command": sys.executable,
        "args": ["-c", "import sys; sys.stdin.read()"],
        "env": [{"name": "MCP_TOKEN", "value": STDIO_SECRET}],
    }
    pids = new["pids"]
    assert len(pids) == 2 and not any(pid_gone(p) for p in pids)
    # the session ends: the MCP servers, the agent's children, end with it
    sessions = client.app.state.agent_sessions.sessions  # type: ignore[attr-defined]
    client.portal.call(sessions.registry[sid].stop, "cancelled")  # type: ignore[union-attr]
    assert sid not in sessions.registry
    assert all(wait_gone(p) for p in pids), [p for p in pids if not pid_gone(p)]
    # started again (session/load): the same servers, the session's addition included
    run_id = prompt(client, sid, "hello")
    wait_for_message(client, sid, run_ended(run_id))
    load = calls(agent_log)[-1]
    assert load["method"] == "session/load"
    assert [s["name"] for s in load["mcpServers"]] == ["files", "notes"]
    controls = client.get(f"/api/sessions/{sid}/controls")
    assert controls.json()["mcpServers"] == ["files", "notes"]
    deleted = client.delete(f"/api/sessions/{sid}")
    assert deleted.status_code == 200, deleted.text
    assert all(wait_gone(p) for p in load["pids"])
    # no answer and no log line carries an env or header value
    answers = [
        client.get(f"/api/sessions/{sid}").text,
        client.get(f"/api/sessions/{sid}/messages").text,
        client.get(f"/api/sessions/{sid}/export").text,
        client.get("/api/sessions").text,
        controls.text,
        response.text,
    ]
    for text in answers:
        assert STDIO_SECRET not in text
    logged = "\n".join(f"{r.getMessage()} {r.args!r} {vars(r)!r}" for r in caplog.records)
    assert caplog.records and STDIO_SECRET not in logged


def test_http_server_to_an_agent_that_takes_http(client: TestClient, agent_log: Path) -> None:
    response = create(client, agentId="webby", mcpServers=["web"])
    assert response.status_code == 201, response.text
    assert response.json()["controls"]["mcpServers"] == ["web"]
    assert HEADER_SECRET not in response.text
    [new] = calls(agent_log)
    assert new["mcpServers"] == [
        {
            "type": "http",
            "name": "web",
            "url": "https://mcp.example.test/mcp",
            "headers": [{"name": "Authorization", "value": HEADER_SECRET}],
        }
    ]


@pytest.mark.parametrize(
    ("agent", "servers"), [("plain", ["web"]), ("webby", ["events"]), ("default", ["web"])]
)
def test_transport_the_agent_cannot_take_is_422(
    client: TestClient,
    agent_log: Path,
    caplog: pytest.LogCaptureFixture,
    agent: str,
    servers: list[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    before = session_count(client)
    response = create(client, agentId=agent, mcpServers=servers)
    assert_error(response, 422, "mcp_transport_not_supported")
    assert response.json()["error"]["details"]["mcpServers"] == servers
    assert session_count(client) == before  # the session was never created
    assert all(
        not s["mcpServers"] or s["mcpServers"][0]["name"] != servers[0] for s in calls(agent_log)
    )
    assert HEADER_SECRET not in "\n".join(f"{r.getMessage()} {vars(r)!r}" for r in caplog.records)


@pytest.mark.parametrize("value", [["nope"], ["files", "nope"], "files", [1], {"files": True}])
def test_unknown_or_malformed_names_are_422(
    client: TestClient, agent_log: Path, value: Any
) -> None:
    before = session_count(client)
    response = create(client, agentId="plain", mcpServers=value)
    code = "mcp_server_not_found" if isinstance(value, list) and value[-1] == "nope" else None
    assert_error(response, 422, code or "validation_error")
    assert session_count(client) == before
    assert calls(agent_log) == []  # no agent was started


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[mcpServers.x]\nurl = 'u'\ncommand = 'c'\n", "not both"),
        ("[mcpServers.x]\nargs = []\n", "needs command"),
        ("[mcpServers.x]\ncommand = 'c'\nargs = 'a'\n", "args must be a list"),
        ("[mcpServers.x]\ncommand = 'c'\nenv = {A = 1}\n", "env must map"),
        ("[mcpServers.x]\nurl = 'u'\ntype = 'ws'\n", 'type must be "http" or "sse"'),
        ("[mcpServers.x]\nurl = 'u'\nheaders = {A = 1}\n", "headers must map"),
        ("[mcpServers.x]\nurl = 'u'\nenv = {}\n", "no env or args"),
        ("mcpServers = 1\n", "[mcpServers] must be a table"),
        ("[agents.a]\ncommand = 'c'\nmcpServers = ['missing']\n", "undefined missing"),
        ("[agents.a]\ncommand = 'c'\nmcpServers = 'x'\n", "must be a list of names"),
    ],
)
def test_agents_file_mistakes_are_refused_at_start(
    tmp_path: Path, make_settings: Callable[..., Settings], text: str, message: str
) -> None:
    path = tmp_path / "agents.toml"
    path.write_text(text)
    with pytest.raises(SettingsError) as info:
        load_agents(make_settings(AGENTS_FILE=str(path)))
    assert message in str(info.value)


def test_repr_hides_secrets(tmp_path: Path, make_settings: Callable[..., Settings]) -> None:
    path = tmp_path / "agents.toml"
    path.write_text(agents_toml(tmp_path / "log"))
    agents = load_agents(make_settings(AGENTS_FILE=str(path)))
    text = repr(agents) + repr(dict(agents["plain"].mcp_catalog))
    assert "files" in text and STDIO_SECRET not in text and HEADER_SECRET not in text


def test_a_fork_inherits_the_sessions_servers(client: TestClient, agent_log: Path) -> None:
    response = create(client, agentId="plain", mcpServers=["notes"])
    assert response.status_code == 201, response.text
    fork = client.post(f"/api/sessions/{response.json()['id']}/fork", json={})
    assert fork.status_code == 201, fork.text
    assert fork.json()["controls"]["mcpServers"] == ["files", "notes"]
    new = calls(agent_log)[-1]
    assert new["method"] == "session/new"
    assert [s["name"] for s in new["mcpServers"]] == ["files", "notes"]
