"""``sdk_agent.py``, a scripted agent on the official Python SDK (agent-client-protocol
0.12.1), through the real server: every frame is serialized and framed by the SDK."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from server.settings import Settings
from tests.helpers import create_session, pid_gone, prompt, run_ended, wait_for_message
from tests.peers.support import (
    agent_group,
    agent_texts,
    answer_permission,
    run_end,
    tool_messages,
    turn_messages,
)


@pytest.fixture
def settings(make_settings: Callable[..., Settings], sdk_agent_command: str) -> Settings:
    return make_settings(AGENT_COMMAND=sdk_agent_command)


def test_full_turn(client: TestClient, demo_repo_id: str) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    group = agent_group(client, sid)
    run_id = prompt(client, sid, "full")
    asked = answer_permission(client, sid, run_id, "allow_once")
    wait_for_message(client, sid, run_ended(run_id))
    turn = turn_messages(client, sid, run_id)

    thoughts = [m["content"] for m in turn if m["content"]["type"] == "thought"]
    assert [(t["text"], t["partial"]) for t in thoughts] == [
        ("Thinking ", True),
        ("hard", True),
        ("Thinking hard", False),
    ]
    plans = [m["content"] for m in turn if m["content"]["type"] == "plan"]
    assert plans == [
        {
            "type": "plan",
            "steps": [
                {"content": "read", "priority": "high", "status": "in_progress"},
                {"content": "run", "priority": "medium", "status": "pending"},
            ],
        }
    ]
    # Two messages told apart only by messageId, then the last one.
    assert agent_texts(turn) == ["Part one", "Part two", "Done."]

    read = tool_messages(turn, "t1")
    assert [t["status"] for t in read] == ["pending", "in_progress", "completed"]
    assert read[-1]["args"] == {"path": "README.md"} and read[-1]["result"] == {"bytes": 6}
    assert read[-1]["content"] == [
        {"type": "content", "content": {"type": "text", "text": "# Demo"}}
    ]
    run_tool = tool_messages(turn, "t2")
    assert [t["status"] for t in run_tool] == ["pending", "pending", "in_progress", "completed"]
    assert run_tool[-1]["args"] == {"command": "pytest"} and run_tool[-1]["result"] == {
        "exitCode": 0
    }
    assert {o["kind"]: o["optionId"] for o in asked["options"]} == {
        "allow_once": "proceed_once",
        "reject_once": "abort",
        "allow_always": "always",
    }

    usage = [m["content"] for m in turn if m["content"]["type"] == "usage"]
    assert usage == [
        {"type": "usage", "used": 1200, "size": 200000, "cost": {"amount": 0.25, "currency": "USD"}}
    ]
    updates = [m["content"] for m in turn if m["content"]["type"] == "update"]
    assert updates == [
        {
            "type": "update",
            "sessionUpdate": "session_info_update",
            "data": {"title": "SDK scripted session"},
        }
    ]
    assert client.get(f"/api/sessions/{sid}").json()["title"] == "SDK scripted session"

    end = run_end(turn)
    assert (end["status"], end["stopReason"]) == ("completed", "end_turn")
    run = client.get(f"/api/agent-runs/{run_id}").json()
    assert run["usage"] == {"totalTokens": 30, "inputTokens": 20, "outputTokens": 10}
    assert (run["stepCount"], run["summary"]) == (2, "Done.")
    calls = client.get(f"/api/agent-runs/{run_id}/tool-calls").json()["data"]
    assert [(c["toolCallId"], c["status"]) for c in calls] == [
        ("t1", "completed"),
        ("t2", "completed"),
    ]
    assert all(isinstance(c["durationMs"], int) for c in calls)

    response = client.post(f"/api/sessions/{sid}/complete")
    assert response.status_code == 200 and response.json()["status"] == "completed"
    assert all(pid_gone(p) for p in group)


def test_reject_then_cancel_mid_turn(client: TestClient, demo_repo_id: str) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    group = agent_group(client, sid)

    rejected = prompt(client, sid, "full")
    answer_permission(client, sid, rejected, "reject_once")
    wait_for_message(client, sid, run_ended(rejected))
    turn = turn_messages(client, sid, rejected)
    assert tool_messages(turn, "t2")[-1]["status"] == "error"
    assert agent_texts(turn)[-1] == "Skipped."
    assert run_end(turn)["status"] == "completed"

    waiting = prompt(client, sid, "wait")
    wait_for_message(
        client, sid, lambda m: m["runId"] == waiting and m["content"]["type"] == "tool"
    )
    assert client.post(f"/api/sessions/{sid}/cancel").status_code == 202
    wait_for_message(client, sid, run_ended(waiting), timeout=15)
    turn = turn_messages(client, sid, waiting)
    job = tool_messages(turn, "w1")
    assert [t["status"] for t in job] == [
        "in_progress",
        "error",
    ]  # the agent's own update after cancel
    assert job[-1]["result"] == {"error": "cancelled"}
    end = run_end(turn)
    assert (end["status"], end["stopReason"]) == ("cancelled", "cancelled")
    assert client.get(f"/api/sessions/{sid}").json()["status"] == "active"

    response = client.delete(f"/api/sessions/{sid}")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert all(pid_gone(p) for p in group)


def test_client_methods_through_the_sdk(
    client: TestClient, demo_repo_id: str, workspace_root: Path
) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    run_id = prompt(client, sid, "client")
    wait_for_message(client, sid, run_ended(run_id))
    turn = turn_messages(client, sid, run_id)
    assert run_end(turn)["status"] == "completed"
    assert agent_texts(turn) == [
        "\n".join(
            [
                "read: 'second line\\n'",
                "write: ok",
                "outside: error -32602",  # refused by the workspace, not read
                "terminal: exit 3 output 'out\\n' truncated False",
            ]
        )
    ]
    assert (workspace_root / "demo" / "notes" / "sdk.txt").read_text() == "written by the SDK\n"
