"""AGENT_SANDBOX on a host where bubblewrap is missing (a PATH without it): ``on`` refuses
every agent with 503 ``sandbox_unavailable`` naming why, ``auto`` runs them without a
sandbox and says so once; ``/readyz`` and the views tell which."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from server.app import create_app
from server.settings import Settings

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A PATH with git (the server needs it) and without bwrap; the demo agent's command
    is an absolute path."""
    tools = tmp_path / "bin"
    tools.mkdir()
    git = shutil.which("git")
    assert git is not None
    (tools / "git").symlink_to(git)
    monkeypatch.setenv("PATH", str(tools))
    assert shutil.which("bwrap") is None


def repo_id(client: TestClient) -> str:
    return str(client.get("/api/repos").json()["repos"][0]["id"])


def test_on_refuses_agents_it_cannot_wall_in(
    no_bwrap: None, make_settings: Callable[..., Settings]
) -> None:
    with TestClient(create_app(make_settings(AGENT_SANDBOX="on"))) as client:
        ready = client.get("/readyz").json()
        assert ready["status"] == "ok" and ready["sandbox"]["enabled"] is False
        assert "bubblewrap" in ready["sandbox"]["reason"]
        response = client.post("/api/sessions", json={"repoId": repo_id(client)})
        assert response.status_code == 503, response.text
        error = response.json()["error"]
        assert error["code"] == "sandbox_unavailable" and "bubblewrap" in error["message"]
        assert client.get("/metrics").status_code == 200


def test_on_refuses_before_a_session_or_a_slot_exists(
    no_bwrap: None, make_settings: Callable[..., Settings]
) -> None:
    """The refusal comes before admission: no session row (not even one in ``error``),
    no slot taken, so more refusals than MAX_CONCURRENT_SESSIONS are all 503, never 429."""
    settings = make_settings(AGENT_SANDBOX="on", MAX_CONCURRENT_SESSIONS=1)
    with TestClient(create_app(settings)) as client:
        repo = repo_id(client)
        for _ in range(3):
            response = client.post("/api/sessions", json={"repoId": repo})
            assert response.status_code == 503, response.text
            assert response.json()["error"]["code"] == "sandbox_unavailable"
        listed = client.get("/api/sessions").json()
        assert listed["total"] == 0 and listed["sessions"] == []
        assert client.get("/api/sessions", params={"status": "error"}).json()["total"] == 0


def test_auto_runs_agents_without_and_says_so(
    no_bwrap: None, make_settings: Callable[..., Settings], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, "agent_sessions.sandbox"):
        with TestClient(create_app(make_settings(AGENT_SANDBOX="auto"))) as client:
            response = client.post("/api/sessions", json={"repoId": repo_id(client)})
            assert response.status_code == 201, response.text
            assert response.json()["sandbox"] == {"enabled": False, "network": "open"}
            agents = client.get("/api/agents").json()["agents"]
            assert agents[0]["sandbox"] == {"enabled": False, "network": "open"}
    warnings = [r for r in caplog.records if getattr(r, "event", "") == "agent_sandbox"]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_auto_turns_it_on_where_bubblewrap_works(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings(AGENT_SANDBOX="auto", AGENT_NETWORK="none")
    with TestClient(create_app(settings)) as client:
        assert client.get("/readyz").json()["sandbox"] == {"enabled": True, "reason": None}
        response = client.post("/api/sessions", json={"repoId": repo_id(client)})
        assert response.status_code == 201, response.text
        assert response.json()["sandbox"] == {"enabled": True, "network": "none"}
        home = Path(settings.database_url.split("///", 1)[1]).parent / "agent-homes" / "default"
        assert home.is_dir() and oct(home.stat().st_mode & 0o777) == "0o700"
