"""The step budget, pause and resume.

A step is one tool call. When a run's tool calls reach ``maxSteps`` the server sends
``session/cancel`` and the run ends ``paused`` (stopReason ``cancelled``). The agent may
still send updates in flight before the cancel reaches it (the demo: call_4 going
in_progress and completing, even call_5 appearing). Decision: those are recorded as they
happened, because the records are an audit of what the agent did. So ``stepCount`` of a
paused run is the number of tool calls it made (``>= maxSteps``; normally equal), its
rows are numbered 1..stepCount without a gap, each ends completed / error / cancelled
(the ones the cancel cut off are ``cancelled``), and a resume continues at stepCount + 1.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from starlette.testclient import TestClient

from server.app import create_app
from store import runs as run_store
from tests.helpers import (
    create_session,
    demo_command,
    is_type,
    live_agent_pid,
    messages,
    pid_gone,
    prompt,
    run_ended,
    wait_for_message,
)
from tests.runs.support import demo_repo, finished_run, get_ok, permission_message, tool_calls

FINISHED = {"completed", "error", "cancelled"}


def resume(client: TestClient, run_id: str, status: int = 202, **body: Any) -> dict[str, Any]:
    response = client.post(f"/api/agent-runs/{run_id}/resume", json=body)
    assert response.status_code == status, response.text
    return dict(response.json())


def refused(client: TestClient, run_id: str, status: int, code: str, **body: Any) -> dict[str, Any]:
    error = resume(client, run_id, status, **body)["error"]
    assert error["code"] == code, error
    return dict(error)


def check_steps(client: TestClient, run: dict[str, Any], base: int) -> list[dict[str, Any]]:
    """A finished run's rows: numbered base+1..stepCount, each finished."""
    calls = tool_calls(client, run["id"])
    assert [c["stepNumber"] for c in calls] == list(range(base + 1, run["stepCount"] + 1))
    assert all(c["status"] in FINISHED and c["completedAt"] for c in calls), calls
    return calls


def user_text(client: TestClient, run_id: str) -> str:
    data = get_ok(client, f"/api/agent-runs/{run_id}/messages", limit=1000)["data"]
    return str(next(m for m in data if m["role"] == "user")["content"]["text"])


def test_run_pauses_when_its_tool_calls_reach_max_steps(make_settings: Callable[..., Any]) -> None:
    with TestClient(create_app(make_settings(AGENT_MAX_STEPS=4))) as client:
        session = create_session(client, demo_repo(client))
        # 100 tools of ~10 ms each: the cancel sent at the 4th has about a second to reach
        # the agent (with 10, a loaded machine let the agent end its turn first: end_turn)
        run = finished_run(client, session["id"], prompt(client, session["id"], "tools 100"))
        assert (run["status"], run["stopReason"], run["maxSteps"]) == ("paused", "cancelled", 4)
        assert 4 <= run["stepCount"] < 100  # the cancel took effect: not all 100 ran
        calls = check_steps(client, run, 0)
        assert [c["status"] for c in calls[:3]] == ["completed", "completed", "error"]
        assert calls[3]["status"] in ("completed", "cancelled")
        run_end = wait_for_message(
            client, session["id"], is_type("run", runId=run["id"], status="paused")
        )
        assert run_end["stepNumber"] == run["stepCount"]
        # The session stays usable: the run is over, nothing waits.
        assert get_ok(client, f"/api/sessions/{session['id']}")["activeRunId"] is None


def test_max_steps_resumes_twice_with_cumulative_step_numbers(
    make_settings: Callable[..., Any],
) -> None:
    with TestClient(create_app(make_settings(AGENT_MAX_STEPS=4))) as client:
        session = create_session(client, demo_repo(client))
        first = finished_run(client, session["id"], prompt(client, session["id"], "tools 10"))
        assert first["status"] == "paused"

        accepted = resume(client, first["id"], text="tools 10")
        assert accepted["id"] != first["id"]
        assert (accepted["status"], accepted["resumedFrom"], accepted["maxSteps"]) == (
            "running",
            first["id"],
            4,
        )
        assert accepted["stepCount"] == first["stepCount"]  # cumulative: starts where it paused
        assert (accepted["sessionId"], accepted["parentRunId"]) == (session["id"], None)
        second = finished_run(client, session["id"], accepted["id"])
        assert second["status"] == "paused"  # a fresh budget of 4, spent again
        assert second["stepCount"] >= first["stepCount"] + 4
        calls = check_steps(client, second, first["stepCount"])
        assert calls[0]["toolCallId"] == "call_1"  # the agent's ids restart; our steps do not
        assert user_text(client, second["id"]) == "tools 10"

        third = finished_run(client, session["id"], resume(client, second["id"])["id"])
        assert (third["status"], third["resumedFrom"]) == ("completed", second["id"])
        # The server asked the agent to continue; the demo answers with its default turn.
        assert user_text(client, third["id"]) == "Continue where you left off."
        assert "You said: Continue where you left off." in third["summary"]
        [read] = check_steps(client, third, second["stepCount"])
        assert third["stepCount"] == second["stepCount"] + 1 == read["stepNumber"]


def test_resume_takes_its_own_max_steps_and_keeps_the_parent(
    make_settings: Callable[..., Any],
) -> None:
    with TestClient(create_app(make_settings(AGENT_MAX_STEPS=3))) as client:
        parent_session = create_session(client, demo_repo(client))
        parent = finished_run(
            client, parent_session["id"], prompt(client, parent_session["id"], "hi")
        )
        session = create_session(client, demo_repo(client), parentRunId=parent["id"])
        first = finished_run(client, session["id"], prompt(client, session["id"], "tools 10"))
        assert (first["status"], first["parentRunId"]) == ("paused", parent["id"])
        accepted = resume(client, first["id"], maxSteps=2, text="tools 10")
        second = finished_run(client, session["id"], accepted["id"])
        assert (second["status"], second["maxSteps"]) == ("paused", 2)
        assert second["parentRunId"] == parent["id"]  # a sub-agent's resumed run stays its child
        assert second["stepCount"] >= first["stepCount"] + 2
        check_steps(client, second, first["stepCount"])
        children = get_ok(client, "/api/agent-runs", parentRunId=parent["id"])["data"]
        assert [r["id"] for r in children] == [second["id"], first["id"]]
        for bad in (0, -1, "2", True, 1.5):
            refused(client, second["id"], 422, "validation_error", maxSteps=bad)
        for bad_text in ("", "   ", 5):
            refused(client, second["id"], 422, "validation_error", text=bad_text)


def test_resume_is_refused_at_the_cumulative_cap(make_settings: Callable[..., Any]) -> None:
    with TestClient(
        create_app(make_settings(AGENT_MAX_STEPS=4, MAX_TOTAL_STEPS_PER_RUN=6))
    ) as client:
        session = create_session(client, demo_repo(client))
        run = finished_run(client, session["id"], prompt(client, session["id"], "tools 10"))
        chain = [run]
        while run["stepCount"] < 6:
            accepted = resume(client, run["id"], text="tools 10")
            assert accepted["maxSteps"] == min(4, 6 - run["stepCount"])  # never past the cap
            run = finished_run(client, session["id"], accepted["id"])
            assert run["status"] == "paused"
            chain.append(run)
        assert len(chain) >= 2
        error = refused(client, run["id"], 409, "step_limit_reached", text="tools 10")
        assert error["details"]["limit"] == 6
        assert "6" in error["message"]


def set_step_count(client: TestClient, run_id: str, steps: int) -> None:
    """Move a run far along its chain without making hundreds of tool calls."""
    database = client.app.state.agent_sessions.db  # type: ignore[attr-defined]

    async def write() -> None:
        async with database.write() as db, db.begin():
            await run_store.update_run(db, run_id, step_count=steps)

    client.portal.call(write)  # type: ignore[union-attr]


def test_the_default_cumulative_cap_is_500(make_settings: Callable[..., Any]) -> None:
    with TestClient(create_app(make_settings(AGENT_MAX_STEPS=3))) as client:
        session = create_session(client, demo_repo(client))
        paused = finished_run(client, session["id"], prompt(client, session["id"], "tools 10"))
        set_step_count(client, paused["id"], 499)
        accepted = resume(client, paused["id"], text="tools 10")
        assert (accepted["stepCount"], accepted["maxSteps"]) == (499, 1)  # one step left
        last = finished_run(client, session["id"], accepted["id"])
        assert last["status"] == "paused" and last["stepCount"] >= 500
        assert tool_calls(client, last["id"])[0]["stepNumber"] == 500
        error = refused(client, last["id"], 409, "step_limit_reached")
        assert error["details"]["limit"] == 500


def test_only_paused_or_interrupted_runs_resume(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    completed = finished_run(client, session["id"], prompt(client, session["id"], "tools 1"))
    refused(client, completed["id"], 409, "run_not_paused")
    cancelled_id = prompt(client, session["id"], "tools 3 permission")
    permission_message(client, session["id"])
    refused(client, cancelled_id, 409, "run_not_paused")  # still running
    assert client.post(f"/api/sessions/{session['id']}/cancel").status_code == 202
    assert finished_run(client, session["id"], cancelled_id)["status"] == "cancelled"
    refused(client, cancelled_id, 409, "run_not_paused")
    crashed = create_session(client, demo_repo_id)
    failed = finished_run(client, crashed["id"], prompt(client, crashed["id"], "crash"))
    assert failed["status"] == "failed"
    refused(client, failed["id"], 409, "run_not_paused")


def test_a_paused_run_resumes_once_and_not_over_a_running_turn(
    make_settings: Callable[..., Any],
) -> None:
    with TestClient(create_app(make_settings(AGENT_MAX_STEPS=2))) as client:
        session = create_session(client, demo_repo(client))
        paused = finished_run(client, session["id"], prompt(client, session["id"], "tools 10"))
        busy = prompt(client, session["id"], "tools 3 permission")
        permission_message(client, session["id"])
        refused(client, paused["id"], 409, "turn_in_progress")
        assert client.post(f"/api/sessions/{session['id']}/cancel").status_code == 202
        finished_run(client, session["id"], busy)
        resumed = finished_run(
            client, session["id"], resume(client, paused["id"], text="tools 1")["id"]
        )
        assert resumed["status"] == "completed"
        # A second resume of the same run would fork its step numbers: refused.
        error = refused(client, paused["id"], 409, "run_not_paused")
        assert error["details"]["resumedBy"] == resumed["id"]
        complete = client.post(f"/api/sessions/{session['id']}/complete")
        assert complete.status_code == 200, complete.text
        other = create_session(client, demo_repo(client))
        paused_elsewhere = finished_run(
            client, other["id"], prompt(client, other["id"], "tools 10")
        )
        assert client.delete(f"/api/sessions/{other['id']}").status_code == 200
        refused(client, paused_elsewhere["id"], 409, "session_not_active")


def test_budget_reached_by_a_permission_request_pauses_the_run(
    make_settings: Callable[..., Any],
) -> None:
    with TestClient(create_app(make_settings(AGENT_MAX_STEPS=1))) as client:
        session = create_session(client, demo_repo(client))
        run_id = prompt(client, session["id"], "ask-permission-bare")  # call_bare is step 1
        try:
            wait_for_message(client, session["id"], run_ended(run_id), timeout=2)
        finally:
            client.post(f"/api/sessions/{session['id']}/cancel")
        run = finished_run(client, session["id"], run_id)
        assert (run["status"], run["stepCount"]) == ("paused", 1)


def test_interrupted_run_resumes_on_a_new_server(make_settings: Callable[..., Any]) -> None:
    """Stopping the server mid-turn marks the run interrupted; the next server restarts
    the agent on resume and gives it the stored conversation."""
    settings = make_settings()
    with TestClient(create_app(settings)) as client:
        session = create_session(client, demo_repo(client))
        first = prompt(client, session["id"], "tools 2")
        finished_run(client, session["id"], first)
        run_id = prompt(client, session["id"], "slow 50")
        wait_for_message(client, session["id"], is_type("text", partial=True, text="chunk 2/50 "))
        old_pid = live_agent_pid(client, session["id"])
    assert pid_gone(old_pid)
    with TestClient(create_app(settings)) as client:
        interrupted = get_ok(client, f"/api/agent-runs/{run_id}")
        assert interrupted["status"] == "interrupted" and interrupted["completedAt"]
        assert interrupted["stepCount"] == 0  # slow makes no tool calls
        accepted = resume(client, run_id)
        assert (accepted["resumedFrom"], accepted["status"]) == (run_id, "running")
        run = finished_run(client, session["id"], accepted["id"])
        assert run["status"] == "completed"
        assert live_agent_pid(client, session["id"]) != old_pid
        assert [c["stepNumber"] for c in tool_calls(client, run["id"])] == [1]
        reply = [
            m["content"]["text"]
            for m in messages(client, session["id"])
            if m["runId"] == run["id"]
            and m["role"] == "agent"
            and m["content"]["type"] == "text"
            and not m["content"]["partial"]
        ]
        assert "slow 50" in reply[-1] and "tools 2" in reply[-1]  # the conversation came along


def test_resume_restarts_a_gone_agent_and_restores_its_session(
    make_settings: Callable[..., Any], tmp_path: Path
) -> None:
    """A paused run, the server stopped: the agent is gone. Resuming starts a new one,
    which gets its conversation back (here through session/load)."""
    state = tmp_path / "agent-state"
    state.mkdir()
    command = demo_command(DEMO_AGENT_LOAD="1", DEMO_AGENT_STATE_DIR=str(state))
    settings = make_settings(AGENT_MAX_STEPS=3, AGENT_COMMAND=command)
    with TestClient(create_app(settings)) as client:
        session = create_session(client, demo_repo(client))
        paused = finished_run(client, session["id"], prompt(client, session["id"], "tools 10"))
        assert paused["status"] == "paused"
        old_pid = live_agent_pid(client, session["id"])
    assert pid_gone(old_pid)
    with TestClient(create_app(settings)) as client:
        assert session["id"] not in client.app.state.agent_sessions.sessions.registry  # type: ignore[attr-defined]
        accepted = resume(client, paused["id"], text="history")
        run = finished_run(client, session["id"], accepted["id"])
        assert (run["status"], run["resumedFrom"], run["stepCount"]) == (
            "completed",
            paused["id"],
            paused["stepCount"],
        )
        assert live_agent_pid(client, session["id"]) != old_pid
        assert "History: tools 10" in run["summary"]  # the new agent knows the earlier turn
        again = finished_run(client, session["id"], prompt(client, session["id"], "tools 1"))
        assert (
            again["stepCount"] == 1 and again["resumedFrom"] is None
        )  # a new prompt is a new chain


@pytest.mark.slow
def test_run_cut_by_a_crash_resumes_after_its_last_step(live_server: Callable[..., Any]) -> None:
    """kill -9 with call_1 booked and its permission pending: the restarted server marks
    the run interrupted with stepCount 1 (kept live while the run went on), and the
    resumed run numbers its calls from 2."""
    server = live_server()
    with httpx.Client(base_url=server.url, timeout=30) as http:
        repo = http.get("/api/repos").json()["repos"][0]["id"]
        session_id = http.post("/api/sessions", json={"repoId": repo}).json()["id"]
        run_id = http.post(
            f"/api/sessions/{session_id}/prompt", json={"text": "tools 3 permission"}
        ).json()["runId"]
        poll = cast(TestClient, http)  # wait_for_message only uses get()
        wait_for_message(poll, session_id, is_type("permission", outcome=None))
        assert http.get(f"/api/agent-runs/{run_id}").json()["stepCount"] == 1
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(10)
    restarted = live_server()
    with httpx.Client(base_url=restarted.url, timeout=30) as http:
        run = http.get(f"/api/agent-runs/{run_id}").json()
        assert (run["status"], run["stepCount"]) == ("interrupted", 1)
        response = http.post(f"/api/agent-runs/{run_id}/resume", json={})
        assert response.status_code == 202, response.text
        resumed = response.json()
        assert resumed["stepCount"] == 1
        ended = wait_for_message(cast(TestClient, http), session_id, run_ended(resumed["id"]))
        assert ended["content"]["status"] == "completed"
        calls = http.get(f"/api/agent-runs/{resumed['id']}/tool-calls").json()["data"]
        assert [c["stepNumber"] for c in calls] == [2]


def test_two_resumes_of_one_paused_run_at_once_one_wins(
    make_settings: Callable[..., Any],
) -> None:
    """Racing resumes: exactly one is accepted; the other is 409 run_not_paused naming the
    winner in resumedBy (not a second run, not turn_in_progress)."""
    from concurrent.futures import ThreadPoolExecutor

    with TestClient(create_app(make_settings(AGENT_MAX_STEPS=2))) as client:
        session = create_session(client, demo_repo(client))
        for _ in range(3):
            paused = finished_run(client, session["id"], prompt(client, session["id"], "tools 10"))
            assert paused["status"] == "paused"
            url = f"/api/agent-runs/{paused['id']}/resume"
            with ThreadPoolExecutor(2) as pool:
                answers = list(pool.map(lambda u: client.post(u, json={"text": "hi"}), [url, url]))
            accepted = [a.json() for a in answers if a.status_code == 202]
            refusals = [a.json()["error"] for a in answers if a.status_code != 202]
            assert len(accepted) == 1, [a.text for a in answers]
            assert [(e["code"], e["details"].get("resumedBy")) for e in refusals] == [
                ("run_not_paused", accepted[0]["id"])
            ]
            finished_run(client, session["id"], accepted[0]["id"])
