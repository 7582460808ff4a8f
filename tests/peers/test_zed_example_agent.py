"""Zed's TypeScript example agent (@zed-industries/agent-client-protocol 0.4.5,
``typescript/examples/agent.ts`` run by tsx) through the real server.

Its scripted turn, one second between steps (about 5 s a turn): a text chunk; tool call
``call_1`` (read, pending) then an update to completed with content and rawOutput; a second
text chunk; tool call ``call_2`` (edit, pending) and a permission request for it with
options ``allow`` (allow_once) / ``reject`` (reject_once); after allow, ``call_2``
completed and a third text, after reject only a text. It reuses the same tool call ids
every turn, its JSON-RPC ids start at 0, and its session ids are random strings.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from starlette.testclient import TestClient

from server.app import create_app
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

pytestmark = pytest.mark.slow

READ_TEXT = "# My Project\n\nThis is a sample project..."
CONFIG_INPUT = {
    "path": "/home/user/project/config.json",
    "content": '{"database": {"host": "new-host"}}',
}


# The agent notices session/cancel only when its current one-second step ends, while the
# server abandons a turn 2 x AGENT_STOP_GRACE after cancelling it (the tests' default grace
# is 0.5 s): a grace of 3 s keeps the ordinary tests clear of that race.
@pytest.fixture
def settings(make_settings: Callable[..., Settings], zed_agent_command: str) -> Settings:
    return make_settings(AGENT_COMMAND=zed_agent_command, AGENT_STOP_GRACE=3)


def wait_gone(pids: list[int], timeout: float = 5) -> list[int]:
    """Pids still present after ``timeout`` (polling /proc: processes we do not own)."""
    deadline = time.monotonic() + timeout
    while (left := [p for p in pids if not pid_gone(p)]) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


def statuses(tools: list[dict[str, Any]]) -> list[str]:
    return [t["status"] for t in tools]


def test_full_turn_with_permission_allowed(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    sid = session["id"]
    assert session["status"] == "active"
    group = agent_group(client, sid)
    assert len(group) >= 2, "tsx runs the agent in a child node process of its own group"

    run_id = prompt(client, sid, "Please improve the config")
    asked = answer_permission(client, sid, run_id, "allow_once")
    wait_for_message(client, sid, run_ended(run_id), timeout=30)
    turn = turn_messages(client, sid, run_id)

    assert turn[0]["role"] == "user" and turn[0]["content"] == {
        "type": "text",
        "text": "Please improve the config",
    }
    assert turn[1]["content"]["status"] == "running"

    # Three agent messages, each streamed as one chunk, closed by the next update or the end.
    texts = agent_texts(turn)
    assert len(texts) == 3
    assert texts[0].startswith("I'll help you with that.")
    assert texts[2].startswith(" Perfect! I've successfully updated the configuration.")

    # call_1: tool_call (pending) then tool_call_update (completed): merged state.
    read = tool_messages(turn, "call_1")
    assert statuses(read) == ["pending", "completed"]
    assert read[-1] == {
        "type": "tool",
        "toolCallId": "call_1",
        "tool": "Reading project files",
        "kind": "read",
        "status": "completed",
        "args": {"path": "/project/README.md"},
        "result": {"content": READ_TEXT},
        "locations": [{"path": "/project/README.md"}],
        "content": [{"type": "content", "content": {"type": "text", "text": READ_TEXT}}],
    }

    # call_2: pending, the permission's toolCall merged in (its rawInput/locations differ
    # from the tool_call's), then completed with only status and rawOutput sent.
    edit = tool_messages(turn, "call_2")
    assert statuses(edit) == ["pending", "pending", "completed"]
    assert edit[0]["args"]["path"] == "/project/config.json"
    assert (
        edit[-1]["tool"] == "Modifying critical configuration file" and edit[-1]["kind"] == "edit"
    )
    assert edit[-1]["args"] == CONFIG_INPUT
    assert edit[-1]["locations"] == [{"path": "/home/user/project/config.json"}]
    assert edit[-1]["result"] == {"success": True, "message": "Configuration updated"}

    # The permission request, relayed with the agent's own options, then its outcome.
    permissions = [m["content"] for m in turn if m["content"]["type"] == "permission"]
    assert [p["outcome"] for p in permissions] == [
        None,
        {"outcome": "selected", "optionId": "allow"},
    ]
    assert (
        asked["toolCallId"] == "call_2" and asked["tool"] == "Modifying critical configuration file"
    )
    assert {o["kind"]: o["optionId"] for o in asked["options"]} == {
        "allow_once": "allow",
        "reject_once": "reject",
    }

    end = run_end(turn)
    assert (end["status"], end["stopReason"]) == ("completed", "end_turn")
    assert turn[-1]["content"] == end

    run = client.get(f"/api/agent-runs/{run_id}").json()
    assert (run["status"], run["stepCount"]) == ("completed", 2)
    calls = client.get(f"/api/agent-runs/{run_id}/tool-calls").json()["data"]
    assert [(c["toolCallId"], c["status"]) for c in calls] == [
        ("call_1", "completed"),
        ("call_2", "completed"),
    ]

    response = client.post(f"/api/sessions/{sid}/complete")
    assert response.status_code == 200 and response.json()["status"] == "completed"
    assert wait_gone(group) == []


def test_cancel_mid_turn_then_a_new_turn_with_reused_tool_ids(
    client: TestClient, demo_repo_id: str
) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    group = agent_group(client, sid)

    first = prompt(client, sid, "start something")
    wait_for_message(client, sid, lambda m: m["runId"] == first and m["content"]["type"] == "tool")
    assert client.post(f"/api/sessions/{sid}/cancel").status_code == 202
    wait_for_message(client, sid, run_ended(first), timeout=15)
    turn = turn_messages(client, sid, first)
    end = run_end(turn)
    assert (end["status"], end["stopReason"]) == ("cancelled", "cancelled")
    # The agent never finished call_1: the server closes it as cancelled.
    assert tool_messages(turn, "call_1")[-1]["status"] == "cancelled"
    assert not [m for m in turn if m["content"]["type"] == "permission"]
    assert client.get(f"/api/agent-runs/{first}").json()["status"] == "cancelled"
    assert client.get(f"/api/sessions/{sid}").json()["status"] == "active"

    # The next turn uses the same tool call ids: fresh state, not the cancelled one.
    second = prompt(client, sid, "try again")
    answer_permission(client, sid, second, "reject_once")
    wait_for_message(client, sid, run_ended(second), timeout=30)
    turn = turn_messages(client, sid, second)
    assert statuses(tool_messages(turn, "call_1")) == ["pending", "completed"]
    texts = agent_texts(turn)
    assert (
        texts[-1]
        == " I understand you prefer not to make that change. I'll skip the configuration update."
    )
    end = run_end(turn)
    assert (end["status"], end["stopReason"]) == ("completed", "end_turn")
    calls = client.get(f"/api/agent-runs/{second}/tool-calls").json()["data"]
    assert [c["toolCallId"] for c in calls] == ["call_1", "call_2"]

    response = client.delete(f"/api/sessions/{sid}")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert wait_gone(group) == []


def test_cancel_while_a_permission_waits_ends_the_run_cancelled(
    client: TestClient, demo_repo_id: str
) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    run_id = prompt(client, sid, "go")
    wait_for_message(
        client, sid, lambda m: m["runId"] == run_id and m["content"]["type"] == "permission"
    )
    assert client.post(f"/api/sessions/{sid}/cancel").status_code == 202
    wait_for_message(client, sid, run_ended(run_id), timeout=15)
    turn = turn_messages(client, sid, run_id)
    permissions = [m["content"] for m in turn if m["content"]["type"] == "permission"]
    assert permissions[-1]["outcome"] == {"outcome": "cancelled"}
    assert run_end(turn)["status"] == "cancelled"
    assert client.get(f"/api/agent-runs/{run_id}").json()["status"] == "cancelled"
    assert tool_messages(turn, "call_2")[-1]["status"] == "cancelled"


def test_a_rejected_tool_call_is_not_left_pending(client: TestClient, demo_repo_id: str) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    run_id = prompt(client, sid, "go")
    answer_permission(client, sid, run_id, "reject_once")
    wait_for_message(client, sid, run_ended(run_id), timeout=30)
    turn = turn_messages(client, sid, run_id)
    assert run_end(turn)["status"] == "completed"
    assert tool_messages(turn, "call_2")[-1]["status"] not in ("pending", "in_progress")
    calls = client.get(f"/api/agent-runs/{run_id}/tool-calls").json()["data"]
    assert all(c["status"] not in ("pending", "in_progress") for c in calls), calls


def run_ends(client: TestClient, session_id: str, run_id: str) -> list[str]:
    return [
        m["content"]["status"]
        for m in turn_messages(client, session_id, run_id)
        if m["content"]["type"] == "run" and m["content"]["status"] != "running"
    ]


def settle(client: TestClient, session_id: str, run_id: str, window: float = 3) -> list[str]:
    """The run's end statuses once a second one arrived, or after ``window`` seconds
    without one (the agent answers its cancel within about 1 s; we wait 3)."""
    deadline = time.monotonic() + window
    while len(ends := run_ends(client, session_id, run_id)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    return ends


def test_a_cancel_answered_after_the_abandon_ends_the_run_once(
    make_settings: Callable[..., Settings], zed_agent_command: str
) -> None:
    # Grace 0.05 s: the server gives up after 0.1 s; the agent answers at the end of its
    # current one-second step, long after.
    settings = make_settings(AGENT_COMMAND=zed_agent_command, AGENT_STOP_GRACE=0.05)
    with TestClient(create_app(settings)) as client:
        repo = client.get("/api/repos").json()["repos"][0]["id"]
        sid = create_session(client, repo)["id"]
        first = prompt(client, sid, "go")
        wait_for_message(
            client, sid, lambda m: m["runId"] == first and m["content"]["type"] == "tool"
        )
        assert client.post(f"/api/sessions/{sid}/cancel").status_code == 202
        wait_for_message(client, sid, run_ended(first))
        assert settle(client, sid, first) == ["cancelled"]
        assert client.get(f"/api/agent-runs/{first}").json()["status"] == "cancelled"


def test_a_paused_run_abandoned_after_its_cancel_stays_paused(
    make_settings: Callable[..., Settings], zed_agent_command: str
) -> None:
    settings = make_settings(
        AGENT_COMMAND=zed_agent_command, AGENT_STOP_GRACE=0.05, AGENT_MAX_STEPS=1
    )
    with TestClient(create_app(settings)) as client:
        repo = client.get("/api/repos").json()["repos"][0]["id"]
        sid = create_session(client, repo)["id"]
        run_id = prompt(client, sid, "go")  # call_1 is step 1 of 1: the server pauses the run
        wait_for_message(client, sid, run_ended(run_id))
        assert settle(client, sid, run_id) == ["paused"]
        assert client.get(f"/api/agent-runs/{run_id}").json()["status"] == "paused"
