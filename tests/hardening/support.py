"""The hardening tests' app: the scripted agent of ``numbers_agent.py`` in a folder of
the test's own, and helpers to play a prompt spec through it."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from server.app import create_app
from server.settings import Settings
from tests.helpers import create_session, prompt, run_ended, wait_for_message

AGENT = Path(__file__).with_name("numbers_agent.py")


def agent_command(folder: Path) -> str:
    return f"{sys.executable} {AGENT} {folder}"


def spec(updates: list[str] = (), usage: str = "null") -> str:  # type: ignore[assignment]
    """A prompt text the agent plays: raw update texts, then the raw usage."""
    return json.dumps({"updates": list(updates), "usage": usage})


def played(client: TestClient, session_id: str, text: str) -> dict[str, Any]:
    """Prompt ``text``; return the stored run once its end is stored."""
    run_id = prompt(client, session_id, text)
    wait_for_message(client, session_id, run_ended(run_id))
    response = client.get(f"/api/agent-runs/{run_id}")
    assert response.status_code == 200, response.text
    return dict(response.json())


def demo_repo(client: TestClient) -> str:
    repos = client.get("/api/repos").json()["repos"]
    return str(next(r["id"] for r in repos if r["name"] == "demo"))


def app_client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as client:
        yield client


def new_session(client: TestClient) -> str:
    return str(create_session(client, demo_repo(client))["id"])
