"""A write that fails (here the run's end: the database refuses it) costs its own session
only: the session ends in ``error`` and says so, the server keeps taking sessions, and
/readyz answers 503 only while the server cannot take them."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url
from starlette.testclient import TestClient

from server.app import create_app
from server.settings import Settings
from tests.hardening.support import agent_command, demo_repo, new_session
from tests.helpers import is_type, prompt, wait_for_message

REFUSE_RUN_END = """
CREATE TRIGGER refuse_run_end BEFORE UPDATE OF status ON runs
WHEN NEW.status = 'completed' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END
"""


@pytest.fixture
def settings(make_settings: Callable[..., Settings], tmp_path: Path) -> Settings:
    folder = tmp_path / "agent"
    folder.mkdir()
    return make_settings(AGENT_COMMAND=agent_command(folder))


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def test_a_failed_run_end_costs_its_session_only(client: TestClient, settings: Settings) -> None:
    path = make_url(settings.database_url).database
    assert path is not None
    session_id = new_session(client)
    with sqlite3.connect(path) as db:
        db.execute(REFUSE_RUN_END)
    prompt(client, session_id, "hello")
    wait_for_message(client, session_id, is_type("status", status="error", reason="write_failed"))
    with sqlite3.connect(path) as db:
        db.execute("DROP TRIGGER refuse_run_end")
    # the server still takes sessions, and says it can
    assert client.get("/readyz").status_code == 200
    other = client.post("/api/sessions", json={"repoId": demo_repo(client)})
    assert other.status_code == 201, other.text
    prompt(client, other.json()["id"], "hello")
    assert client.get(f"/api/sessions/{session_id}").json()["status"] == "error"
    # its run did not stay running
    runs = client.get("/api/agent-runs", params={"sessionId": session_id}).json()["data"]
    assert [r["status"] for r in runs] == ["failed"], runs
    assert runs[0]["errorMessage"] == "the run's messages could not be stored"


def test_readyz_fails_while_sessions_cannot_start(client: TestClient) -> None:
    assert client.get("/readyz").status_code == 200
    supervisor = client.app.state.agent_sessions.sessions.supervisor  # type: ignore[attr-defined]
    # the state a crashed supervisor (then: hub) used to leave behind, unreported
    supervisor.shutting_down = True
    try:
        refused = client.post("/api/sessions", json={"repoId": demo_repo(client)})
        assert refused.status_code == 503, refused.text
        ready = client.get("/readyz")
        assert ready.status_code == 503, ready.text
        assert ready.json()["error"]["code"] == "not_ready"
    finally:
        supervisor.shutting_down = False
