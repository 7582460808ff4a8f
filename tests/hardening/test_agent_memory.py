"""An agent that forgets its session: after a restart, its ``session/load`` is refused;
the session goes on with a fresh ``session/new`` and the stored transcript, a ``status``
message says the agent's memory was rebuilt, and any 502 keeps the agent's reason."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from starlette.testclient import TestClient

from server.app import create_app
from server.settings import Settings
from tests.hardening.support import agent_command, demo_repo, played
from tests.helpers import assert_error, create_session, is_type, messages

FORGOT = "No previous sessions found"


def _prompts(folder: Path) -> list[list[dict[str, object]]]:
    lines = (folder / "prompts.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _first_turn(settings: Settings) -> str:
    with TestClient(create_app(settings)) as client:
        session_id = str(create_session(client, demo_repo(client))["id"])
        assert played(client, session_id, "remember the word parsnip")["status"] == "completed"
    return session_id


def test_a_refused_load_rebuilds_the_agents_memory(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / "load").write_text("")  # loads (and advertises loadSession) for now
    settings = make_settings(AGENT_COMMAND=agent_command(folder))
    session_id = _first_turn(settings)
    (folder / "load").write_text(FORGOT)
    with TestClient(create_app(settings)) as client:
        run = played(client, session_id, "which word?")
        assert run["status"] == "completed", run
        assert client.get(f"/api/sessions/{session_id}").json()["status"] == "active"
        (status,) = [
            m
            for m in messages(client, session_id)
            if is_type("status", reason="agent_memory_rebuilt")(m)
        ]
        assert status["content"]["status"] == "active"
        assert status["content"]["detail"]["refused"] == {
            "method": "session/load",
            "code": -32603,
            "message": FORGOT,
        }
    last = _prompts(folder)[-1]
    sent = " ".join(str(block.get("text", "")) for block in last)
    assert "parsnip" in sent  # the transcript was handed over
    assert "which word?" in sent


def test_a_502_keeps_the_agents_reason(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / "load").write_text("")
    settings = make_settings(AGENT_COMMAND=agent_command(folder))
    session_id = _first_turn(settings)
    (folder / "load").write_text(FORGOT)
    (folder / "new").write_text("quota exhausted for today")
    with TestClient(create_app(settings)) as client:
        response = client.post(f"/api/sessions/{session_id}/prompt", json={"text": "again"})
        error = assert_error(response, 502, "agent_start_failed")
        assert "quota exhausted for today" in error["message"]
        assert FORGOT in error["message"]
        assert error["details"]["agentError"] == {
            "method": "session/new",
            "code": -32603,
            "message": "quota exhausted for today",
        }
        assert error["details"]["refused"]["message"] == FORGOT
