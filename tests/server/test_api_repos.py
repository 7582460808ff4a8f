"""API.md, Repositories and Agents: every endpoint and every error it can return."""

from __future__ import annotations

import logging
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from server.app import create_app
from server.settings import Settings
from server.web.errors import exception_handlers
from server.web.routes import ops as ops_routes
from server.web.routes import repos as repos_routes
from server.web.routes import sessions as sessions_routes
from tests.conftest import make_git_repo
from tests.helpers import assert_error

UNKNOWN_ID = "00000000-0000-4000-8000-000000000000"


def assert_repo_shape(repo: dict[str, Any]) -> None:
    assert set(repo) == {"id", "name", "path", "isGitRepo", "createdAt"}
    uuid.UUID(repo["id"])
    assert repo["createdAt"].endswith("Z")


# -- POST /api/repos -----------------------------------------------------------------------


def test_register_relative_path(client: TestClient, workspace_root: Path) -> None:
    make_git_repo(workspace_root / "proj")
    response = client.post("/api/repos", json={"path": "proj", "name": "My project"})
    assert response.status_code == 201, response.text
    repo = response.json()
    assert_repo_shape(repo)
    assert repo["name"] == "My project"
    assert repo["path"] == str((workspace_root / "proj").resolve())
    assert repo["isGitRepo"] is True


def test_register_absolute_path_of_a_plain_directory(
    client: TestClient, workspace_root: Path
) -> None:
    (workspace_root / "plain" / "sub").mkdir(parents=True)
    target = workspace_root / "plain" / "sub"
    response = client.post("/api/repos", json={"path": str(target)})
    assert response.status_code == 201, response.text
    repo = response.json()
    assert repo["name"] == "sub"  # defaults to the directory name
    assert repo["path"] == str(target.resolve())
    assert repo["isGitRepo"] is False


@pytest.mark.parametrize(
    "path",
    [
        "../outside",
        "..",
        "plain/../../outside",
        "/etc",
        "{outside}",
        "link-out",
        "link-out/sub",
        "a\x00b",
    ],
)
def test_register_outside_the_workspace_is_403(
    client: TestClient, workspace_root: Path, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    outside = workspace_root.parent / "outside"
    (outside / "sub").mkdir(parents=True, exist_ok=True)
    (workspace_root / "plain").mkdir(exist_ok=True)
    (workspace_root / "link-out").symlink_to(outside)
    with caplog.at_level(logging.WARNING, logger="agent_sessions.security"):
        response = client.post("/api/repos", json={"path": path.format(outside=outside)})
    error = assert_error(response, 403, "path_outside_workspace")
    assert error["details"]["path"] == path.format(outside=outside)
    # API.md: rejections are logged as security events.
    assert any(
        r.name == "agent_sessions.security" and r.levelno >= logging.WARNING for r in caplog.records
    )
    assert all(r["path"] != str(outside) for r in client.get("/api/repos").json()["repos"])


def test_register_symlink_inside_the_workspace_resolves_to_its_target(
    client: TestClient, workspace_root: Path, demo_repo_id: str
) -> None:
    (workspace_root / "alias").symlink_to(workspace_root / "demo")
    # The symlink resolves to demo, which is registered already.
    error = assert_error(
        client.post("/api/repos", json={"path": "alias"}), 409, "repo_already_registered"
    )
    assert error["details"]["path"] == str((workspace_root / "demo").resolve())


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "path"),
        ({"path": None}, "path"),
        ({"path": 7}, "path"),
        ({"path": ""}, "path"),
        ({"path": "plain", "name": 3}, "name"),
    ],
)
def test_register_bad_body_is_422(
    client: TestClient, workspace_root: Path, body: dict[str, Any], field: str
) -> None:
    (workspace_root / "plain").mkdir()
    error = assert_error(client.post("/api/repos", json=body), 422, "validation_error")
    assert error["details"]["field"] == field


def test_register_non_object_body_is_422(client: TestClient) -> None:
    assert_error(client.post("/api/repos", json=["plain"]), 422, "validation_error")


def test_register_missing_path_is_422(client: TestClient) -> None:
    error = assert_error(
        client.post("/api/repos", json={"path": "nowhere"}), 422, "validation_error"
    )
    assert "exist" in error["message"]


def test_register_a_file_is_422(client: TestClient, workspace_root: Path) -> None:
    (workspace_root / "file.txt").write_text("x")
    error = assert_error(
        client.post("/api/repos", json={"path": "file.txt"}), 422, "validation_error"
    )
    assert "directory" in error["message"]


def test_register_twice_is_409(client: TestClient, workspace_root: Path) -> None:
    (workspace_root / "plain").mkdir()
    assert client.post("/api/repos", json={"path": "plain"}).status_code == 201
    for spelling in ("plain", "plain/", "./plain", str(workspace_root / "plain"), "demo/../plain"):
        assert_error(
            client.post("/api/repos", json={"path": spelling}), 409, "repo_already_registered"
        )
    assert sum(r["name"] == "plain" for r in client.get("/api/repos").json()["repos"]) == 1


@pytest.mark.anyio
async def test_racing_registrations_of_one_path_give_one_201_and_409s(
    live_server: Callable[..., Any], workspace_root: Path
) -> None:
    # On PostgreSQL (the second pass) the check and the insert of racing requests can
    # interleave; the unique path then decides, and the loser is a 409 too, never a 500.
    (workspace_root / "raced").mkdir()
    server = live_server()
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        answers = []

        async def register() -> None:
            answers.append(await http.post("/api/repos", json={"path": "raced"}))

        async with anyio.create_task_group() as tg:
            for _ in range(30):
                tg.start_soon(register)
        statuses = sorted(a.status_code for a in answers)
        assert statuses == [201] + [409] * 29, [a.text for a in answers if a.status_code >= 500]
        for answer in answers:
            if answer.status_code == 409:
                assert answer.json()["error"]["code"] == "repo_already_registered"


def test_register_invalid_json_is_400(client: TestClient) -> None:
    response = client.post(
        "/api/repos", content=b'{"path": ', headers={"content-type": "application/json"}
    )
    assert_error(response, 400, "invalid_json")


def test_register_wrong_content_type_is_400(client: TestClient, workspace_root: Path) -> None:
    (workspace_root / "plain").mkdir()
    response = client.post(
        "/api/repos", content=b'{"path": "plain"}', headers={"content-type": "text/plain"}
    )
    assert_error(response, 400, "invalid_json")
    assert all(r["name"] != "plain" for r in client.get("/api/repos").json()["repos"])


def test_register_body_over_max_body_bytes_is_413(make_settings: Callable[..., Settings]) -> None:
    with TestClient(create_app(make_settings(MAX_BODY_BYTES=64))) as small:
        response = small.post("/api/repos", json={"path": "x" * 100})
        error = assert_error(response, 413, "payload_too_large")
        assert error["details"]["limit"] == 64


# -- GET / DELETE ----------------------------------------------------------------------------


def test_list_and_get(client: TestClient, workspace_root: Path, demo_repo_id: str) -> None:
    (workspace_root / "plain").mkdir()
    created = client.post("/api/repos", json={"path": "plain"}).json()
    listed = client.get("/api/repos")
    assert listed.status_code == 200
    repos = listed.json()["repos"]
    assert {r["id"] for r in repos} == {demo_repo_id, created["id"]}  # demo: auto-registered
    for repo in repos:
        assert_repo_shape(repo)
    one = client.get(f"/api/repos/{created['id']}")
    assert one.status_code == 200
    assert one.json() == created


def test_get_unknown_is_404_and_bad_uuid_422(client: TestClient) -> None:
    error = assert_error(client.get(f"/api/repos/{UNKNOWN_ID}"), 404, "repo_not_found")
    assert error["details"]["id"] == UNKNOWN_ID
    assert_error(client.get("/api/repos/not-a-uuid"), 422, "validation_error")
    assert_error(client.delete("/api/repos/not-a-uuid"), 422, "validation_error")
    assert_error(client.delete(f"/api/repos/{UNKNOWN_ID}"), 404, "repo_not_found")


def test_delete(client: TestClient, workspace_root: Path) -> None:
    (workspace_root / "plain").mkdir()
    repo = client.post("/api/repos", json={"path": "plain"}).json()
    response = client.delete(f"/api/repos/{repo['id']}")
    assert response.status_code == 204
    assert response.content == b""
    assert_error(client.get(f"/api/repos/{repo['id']}"), 404, "repo_not_found")
    assert all(r["id"] != repo["id"] for r in client.get("/api/repos").json()["repos"])
    assert (workspace_root / "plain").is_dir()  # unregistering never deletes files
    # It can be registered again.
    assert client.post("/api/repos", json={"path": "plain"}).status_code == 201


def test_delete_while_a_session_is_active_is_409(client: TestClient, demo_repo_id: str) -> None:
    session = client.post("/api/sessions", json={"repoId": demo_repo_id}).json()
    assert session["status"] == "active"
    assert_error(client.delete(f"/api/repos/{demo_repo_id}"), 409, "repo_in_use")
    assert client.get(f"/api/repos/{demo_repo_id}").status_code == 200
    assert client.post(f"/api/sessions/{session['id']}/complete").status_code == 200
    assert client.delete(f"/api/repos/{demo_repo_id}").status_code == 204
    # Its finished sessions went with it.
    assert_error(client.get(f"/api/sessions/{session['id']}"), 404, "session_not_found")


def test_auto_register_can_be_switched_off(
    make_settings: Callable[..., Settings], workspace_root: Path
) -> None:
    make_git_repo(workspace_root / "second")
    with TestClient(create_app(make_settings())) as on:
        assert {r["name"] for r in on.get("/api/repos").json()["repos"]} == {"demo", "second"}
    with TestClient(
        create_app(
            make_settings(
                AUTO_REGISTER_REPOS="false",
                DATABASE_URL=f"sqlite+aiosqlite:///{workspace_root.parent / 'other.db'}",
            )
        )
    ) as off:
        assert off.get("/api/repos").json() == {"repos": []}


# -- routes, methods -----------------------------------------------------------------------


def test_unknown_route_is_404_with_error_body(client: TestClient) -> None:
    assert_error(client.get("/api/nope"), 404, "not_found")
    assert_error(client.get("/api/repos/x/y"), 404, "not_found")


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_unknown_api_route_with_any_method_is_404(client: TestClient, method: str) -> None:
    assert_error(client.request(method, "/api/nope"), 404, "not_found")


METHOD_CASES = [
    ("PUT", "/api/repos", {"GET", "POST"}),
    ("PATCH", "/api/repos/{id}", {"GET", "DELETE"}),
    ("PUT", "/api/sessions", {"GET", "POST"}),
    ("POST", "/api/sessions/{id}", {"GET", "DELETE", "PATCH"}),
    ("GET", "/api/sessions/{id}/prompt", {"POST"}),
]
MORE_METHOD_CASES = [
    ("DELETE", "/api/sessions/{id}/messages", {"GET"}),
    ("POST", "/api/agents", {"GET"}),
]


def assert_405(response: httpx.Response, allowed: set[str]) -> None:
    assert_error(response, 405, "method_not_allowed")
    # RFC 9110: a 405 lists every method the resource supports.
    assert {m.strip() for m in response.headers["allow"].split(",")} - {"HEAD"} == allowed


@pytest.mark.parametrize(("method", "path", "allowed"), METHOD_CASES + MORE_METHOD_CASES)
def test_route_table_answers_wrong_method_with_405_and_full_allow(
    method: str, path: str, allowed: set[str]
) -> None:
    """The route tables alone (no UI, no middleware): one route per path, every method."""
    table = [*ops_routes.routes, *repos_routes.routes, *sessions_routes.routes]
    app = Starlette(routes=table, exception_handlers=exception_handlers)
    with TestClient(app) as bare:
        assert_405(bare.request(method, path.format(id=UNKNOWN_ID)), allowed)


@pytest.mark.parametrize(("method", "path", "allowed"), METHOD_CASES + MORE_METHOD_CASES)
def test_wrong_method_is_405_with_allow(
    client: TestClient, method: str, path: str, allowed: set[str]
) -> None:
    assert_405(client.request(method, path.format(id=UNKNOWN_ID)), allowed)


# -- GET /api/agents -------------------------------------------------------------------------


def test_agents_default_only(client: TestClient, settings: Settings) -> None:
    response = client.get("/api/agents")
    assert response.status_code == 200
    assert response.json() == {
        "agents": [
            {
                "id": "default",
                "command": settings.agent_command,
                "default": True,
                "mcpServers": [],
                "sandbox": {"enabled": False, "network": "open"},  # the suite's AGENT_SANDBOX=off
                "controls": None,  # no session of this agent has started yet
            }
        ]
    }
    assert "agent_bridge.demo_agent" in settings.agent_command


def test_agents_from_agents_file(make_settings: Callable[..., Settings], tmp_path: Path) -> None:
    agents_file = tmp_path / "agents.toml"
    agents_file.write_text(
        '[agents.broken]\ncommand = "python -m agent_bridge.demo_agent"\n'
        'env = {DEMO_AGENT_MODE = "error-new-session"}\n'
        '[agents.other]\ncommand = "other-agent --acp {workspace}"\n'
    )
    with TestClient(create_app(make_settings(AGENTS_FILE=str(agents_file)))) as c:
        agents = c.get("/api/agents").json()["agents"]
        assert [(a["id"], a["default"]) for a in agents] == [
            ("default", True),
            ("broken", False),
            ("other", False),
        ]
        assert agents[2]["command"] == "other-agent --acp {workspace}"


def test_agents_file_env_reaches_the_agent(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    """The configured env is added to the agent's environment: this agent fails session/new."""
    agents_file = tmp_path / "agents.toml"
    python = sys.executable
    agents_file.write_text(
        f'[agents.broken]\ncommand = "{python} -m agent_bridge.demo_agent"\n'
        'env = {DEMO_AGENT_MODE = "error-new-session"}\n'
    )
    with TestClient(create_app(make_settings(AGENTS_FILE=str(agents_file)))) as c:
        repo_id = c.get("/api/repos").json()["repos"][0]["id"]
        error = assert_error(
            c.post("/api/sessions", json={"repoId": repo_id, "agentId": "broken"}),
            502,
            "agent_start_failed",
        )
        assert "session/new" in error["message"]
        sessions = c.get("/api/sessions").json()["sessions"]
        assert [s["status"] for s in sessions] == ["error"]
