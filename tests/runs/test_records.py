"""Run and ToolCall records: every field after real turns of the demo agent.

The demo's ``tools N`` makes tool calls call_1..call_N ("Tool k", kind read / search /
execute in turn, rawInput {k}); every k % 3 == 0 fails with rawOutput {error}.
"""

from __future__ import annotations

import re
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from server.app import create_app
from tests.helpers import create_session, demo_command, prompt
from tests.runs.support import (
    Clock,
    demo_repo,
    finished_run,
    get_ok,
    permission_message,
    stored,
    tool_calls,
)

RUN_FIELDS = {
    "id",
    "sessionId",
    "repoId",
    "agentId",
    "status",
    "stopReason",
    "stepCount",
    "maxSteps",
    "parentRunId",
    "resumedFrom",
    "summary",
    "errorMessage",
    "usage",
    "cost",
    "durationMs",
    "createdAt",
    "completedAt",
    "userId",  # API.md "Users and access"
}
TOOL_CALL_FIELDS = {
    "id",
    "runId",
    "messageId",
    "toolCallId",
    "toolName",
    "kind",
    "input",
    "output",
    "status",
    "durationMs",
    "stepNumber",
    "createdAt",
    "completedAt",
}
ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
KINDS = ("read", "search", "execute")
HOLD = 3600.0  # seconds the server's clock jumps while a permission waits on a person


def when(value: str) -> datetime:
    assert ISO_Z.match(value), value
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def span_ms(first: str, last: str) -> float:
    return (when(last) - when(first)).total_seconds() * 1000


def answer(client: TestClient, session_id: str, request_id: str, option: str = "allow") -> None:
    response = client.post(
        f"/api/sessions/{session_id}/permissions/{request_id}", json={"optionId": option}
    )
    assert response.status_code == 200, response.text


def test_run_record_after_a_tools_turn(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    run_id = prompt(client, session["id"], "tools 6")
    run = finished_run(client, session["id"], run_id)

    assert set(run) == RUN_FIELDS
    final_text = [
        m
        for m in stored(client, session["id"], "text")
        if m["role"] == "agent" and not m["content"]["partial"]
    ]
    assert run["id"] == run_id
    assert run["sessionId"] == session["id"]
    assert run["repoId"] == demo_repo_id
    assert run["agentId"] == "default"
    assert (run["status"], run["stopReason"]) == ("completed", "end_turn")
    assert (run["stepCount"], run["maxSteps"]) == (6, 50)  # AGENT_MAX_STEPS defaults to 50
    assert (run["parentRunId"], run["resumedFrom"], run["errorMessage"]) == (None, None, None)
    assert run["summary"] == final_text[-1]["content"]["text"]
    assert "Ran 6 tools: 4 completed, 2 failed." in run["summary"]
    assert run["usage"] is None  # the demo's prompt result carries no usage
    assert run["cost"] is not None and run["cost"]["currency"] == "USD"
    assert isinstance(run["durationMs"], int)
    assert 0 <= run["durationMs"] <= span_ms(run["createdAt"], run["completedAt"]) + 1
    assert when(run["completedAt"]) >= when(run["createdAt"])
    # The run's own start and end messages agree with the record.
    run_messages = [
        m for m in stored(client, session["id"], "run") if m["content"]["runId"] == run_id
    ]
    assert [m["content"]["status"] for m in run_messages] == ["running", "completed"]
    assert run_messages[-1]["content"]["durationMs"] == run["durationMs"]


def test_tool_call_records_after_a_tools_turn(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    run_id = prompt(client, session["id"], "tools 6")
    run = finished_run(client, session["id"], run_id)
    calls = tool_calls(client, run_id)

    assert [c["stepNumber"] for c in calls] == [1, 2, 3, 4, 5, 6]
    assert len({c["id"] for c in calls}) == 6
    for k, call in enumerate(calls, start=1):
        assert set(call) == TOOL_CALL_FIELDS
        assert call["runId"] == run_id
        assert call["toolCallId"] == f"call_{k}"
        assert call["toolName"] == f"Tool {k}"  # the ACP title
        assert call["kind"] == KINDS[(k - 1) % 3]
        assert call["input"] == {"k": k}  # rawInput
        if k % 3 == 0:  # ACP "failed" → "error", with the error details as output
            assert (call["status"], call["output"]) == ("error", {"error": f"tool {k} failed"})
        else:
            assert (call["status"], call["output"]) == ("completed", {"k": k})  # rawOutput
        assert isinstance(call["durationMs"], int)
        # Measured by the server from in_progress to finished: never longer than the
        # time between the first update it saw (createdAt) and the last (completedAt).
        assert 0 <= call["durationMs"] <= span_ms(call["createdAt"], call["completedAt"]) + 1
        assert when(run["createdAt"]) <= when(call["createdAt"]) <= when(call["completedAt"])
        assert when(call["completedAt"]) <= when(run["completedAt"])
        # messageId: a stored tool message of this run that carried this call.
        message = get_ok(client, f"/api/agent-runs/{run_id}/messages/{call['messageId']}")
        assert message["runId"] == run_id and message["sessionId"] == session["id"]
        assert message["content"]["type"] == "tool"
        assert message["content"]["toolCallId"] == f"call_{k}"
        assert message["content"]["status"] == call["status"]
        assert message["stepNumber"] == k
    # Every tool message of the run carries its call's step number.
    for m in stored(client, session["id"], "tool"):
        assert m["stepNumber"] == int(m["content"]["toolCallId"].removeprefix("call_"))


def test_single_tool_call_endpoint_returns_the_full_json(
    client: TestClient, demo_repo_id: str, workspace_root: Any
) -> None:
    session = create_session(client, demo_repo_id)
    big = "y" * 20000
    run_id = prompt(client, session["id"], f"write notes.txt {big}")
    asked = permission_message(client, session["id"])
    answer(client, session["id"], asked["content"]["requestId"])
    run = finished_run(client, session["id"], run_id)
    assert (run["status"], run["stepCount"]) == ("completed", 2)
    read, write = tool_calls(client, run_id)
    path = str(workspace_root / "demo" / "notes.txt")
    for listed in (read, write):
        one = get_ok(client, f"/api/agent-runs/{run_id}/tool-calls/{listed['id']}")
        assert set(one) == TOOL_CALL_FIELDS
        assert one == listed  # the list shows the same record
    one = get_ok(client, f"/api/agent-runs/{run_id}/tool-calls/{write['id']}")
    assert (one["toolCallId"], one["toolName"], one["kind"], one["stepNumber"]) == (
        "call_2",
        "Write notes.txt",
        "edit",
        2,
    )
    assert one["input"] == {"path": path, "content": big}  # whole, not shortened
    assert (one["status"], one["output"]) == ("completed", {"bytes": 20000})
    readme = (workspace_root / "demo" / "README.md").read_text()
    assert read["input"]["path"].endswith("README.md")
    assert read["output"] == {"bytes": len(readme.encode()), "lines": len(readme.splitlines())}


def test_permission_wait_is_not_part_of_a_tool_duration(
    client: TestClient, demo_repo_id: str, server_clock: Clock
) -> None:
    session = create_session(client, demo_repo_id)
    run_id = prompt(client, session["id"], "tools 3 permission")
    asked = permission_message(client, session["id"])
    server_clock.advance(HOLD)  # an hour on a person's answer
    answer(client, session["id"], asked["content"]["requestId"])
    run = finished_run(client, session["id"], run_id)
    assert run["status"] == "completed"
    assert run["durationMs"] >= HOLD * 1000  # the run's span holds the wait ...
    first = tool_calls(client, run_id)[0]
    assert (first["toolCallId"], first["status"]) == ("call_1", "completed")
    assert first["durationMs"] < HOLD * 1000 / 4, first  # ... the call's leaves it out


def test_permission_wait_is_not_part_of_a_duration_when_no_update_came_first(
    client: TestClient, demo_repo_id: str, server_clock: Clock
) -> None:
    """ask-permission-bare: the permission request is the first thing naming call_bare,
    and the call then completes without in_progress; the row is made by the request."""
    session = create_session(client, demo_repo_id)
    run_id = prompt(client, session["id"], "ask-permission-bare")
    asked = permission_message(client, session["id"])
    server_clock.advance(HOLD)
    answer(client, session["id"], asked["content"]["requestId"])
    run = finished_run(client, session["id"], run_id)
    assert run["durationMs"] >= HOLD * 1000
    [call] = tool_calls(client, run_id)
    assert (call["toolCallId"], call["toolName"], call["status"]) == (
        "call_bare",
        "Run echo hello",
        "completed",
    )
    assert call["input"] == {"command": ["echo", "hello"]}
    assert call["output"] == {"exitCode": 0, "output": "hello\n"}
    assert call["durationMs"] < HOLD * 1000 / 4, call


def test_cancelled_turn_marks_its_unfinished_calls_cancelled(
    client: TestClient, demo_repo_id: str, server_clock: Clock
) -> None:
    session = create_session(client, demo_repo_id)
    run_id = prompt(client, session["id"], "tools 3 permission")
    permission_message(client, session["id"])
    server_clock.advance(HOLD)
    assert client.post(f"/api/sessions/{session['id']}/cancel").status_code == 202
    run = finished_run(client, session["id"], run_id)
    assert (run["status"], run["stopReason"], run["stepCount"]) == ("cancelled", "cancelled", 1)
    assert run["cost"] is None  # no usage_update came in this run
    assert run["summary"] is None  # the agent said nothing in this run
    [call] = tool_calls(client, run_id)
    assert (call["toolCallId"], call["status"], call["output"]) == ("call_1", "cancelled", None)
    assert call["completedAt"] is not None
    assert call["durationMs"] < HOLD * 1000 / 4  # it never ran; it waited on a person
    message = get_ok(client, f"/api/agent-runs/{run_id}/messages/{call['messageId']}")
    assert (message["content"]["toolCallId"], message["content"]["status"]) == (
        "call_1",
        "cancelled",
    )


def test_failed_run_has_an_error_message(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    run_id = prompt(client, session["id"], "crash")
    run = finished_run(client, session["id"], run_id)
    assert run["status"] == "failed"
    assert run["errorMessage"] and "exit" in run["errorMessage"].lower()
    assert run["completedAt"] is not None and run["durationMs"] >= 0
    assert run["stepCount"] == 0 and tool_calls(client, run_id) == []


def test_summary_is_the_final_agent_text_shortened(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    run_id = prompt(client, session["id"], "huge-line 5000")
    run = finished_run(client, session["id"], run_id)
    final = [
        m
        for m in stored(client, session["id"], "text")
        if m["role"] == "agent" and not m["content"]["partial"]
    ]
    text = final[-1]["content"]["text"]
    assert len(text) > 5000
    assert run["summary"] and 0 < len(run["summary"]) <= 501
    assert text.startswith(run["summary"].removesuffix("…"))


def usage_costs(client: TestClient, session_id: str) -> list[float]:
    return [float(m["content"]["cost"]["amount"]) for m in stored(client, session_id, "usage")]


def test_cost_is_the_change_of_the_cumulative_cost_over_the_run(
    client: TestClient, demo_repo_id: str
) -> None:
    session = create_session(client, demo_repo_id)
    first = finished_run(client, session["id"], prompt(client, session["id"], "tools 2"))
    second = finished_run(client, session["id"], prompt(client, session["id"], "tools 4"))
    after_first, after_second = usage_costs(client, session["id"])
    assert after_second > after_first > 0  # cumulative, as the agent reports it
    assert first["cost"]["currency"] == second["cost"]["currency"] == "USD"
    assert first["cost"]["amount"] == pytest.approx(after_first)  # a fresh agent starts at 0
    assert second["cost"]["amount"] == pytest.approx(after_second - after_first)


def test_run_without_agent_text_has_no_summary_even_after_one_with_text(
    client: TestClient, demo_repo_id: str
) -> None:
    session = create_session(client, demo_repo_id)
    earlier = finished_run(client, session["id"], prompt(client, session["id"], "tools 1"))
    assert earlier["summary"]
    run_id = prompt(client, session["id"], "tools 3 permission")
    permission_message(client, session["id"])
    assert client.post(f"/api/sessions/{session['id']}/cancel").status_code == 202
    run = finished_run(client, session["id"], run_id)
    assert run["status"] == "cancelled"
    assert run["summary"] is None


def test_usage_comes_from_the_prompt_result(make_settings: Any) -> None:
    command = f"{sys.executable} {Path(__file__).with_name('script_agent.py')}"
    with TestClient(create_app(make_settings(AGENT_COMMAND=command))) as client:
        repo_id = next(
            r["id"] for r in client.get("/api/repos").json()["repos"] if r["name"] == "demo"
        )
        session = create_session(client, repo_id)
        first = finished_run(client, session["id"], prompt(client, session["id"], "one"))
        second = finished_run(client, session["id"], prompt(client, session["id"], "two"))
    assert first["usage"] == {"inputTokens": 100, "outputTokens": 10, "totalTokens": 110}
    assert second["usage"] == {"inputTokens": 200, "outputTokens": 20, "totalTokens": 220}
    assert (first["summary"], second["summary"]) == ("turn 1", "turn 2")
    assert first["cost"] is None  # this agent sends no usage_update


def test_cost_after_the_agent_is_restored_counts_only_the_run(
    make_settings: Any, tmp_path: Path
) -> None:
    state = tmp_path / "agent-state"
    state.mkdir()
    command = demo_command(DEMO_AGENT_LOAD="1", DEMO_AGENT_STATE_DIR=str(state))
    settings = make_settings(AGENT_COMMAND=command)
    with TestClient(create_app(settings)) as client:
        session = create_session(client, demo_repo(client))
        finished_run(client, session["id"], prompt(client, session["id"], "tools 1"))
    with TestClient(create_app(settings)) as client:  # a new server: the agent is restored
        run = finished_run(client, session["id"], prompt(client, session["id"], "tools 2"))
        before, after = usage_costs(client, session["id"])
    assert after > before > 0  # the restored agent kept its total
    assert run["cost"]["amount"] == pytest.approx(after - before)
