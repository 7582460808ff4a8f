"""Idle cleanup, supervision of misbehaving agents, the escalating stop, and
permissions that never hang (issue: lifecycle, points 3-5)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import update
from starlette.testclient import TestClient

from server.app import create_app
from store import SessionRecord
from tests.helpers import (
    create_session,
    demo_command,
    is_type,
    live_agent_pid,
    messages,
    pid_gone,
    process_state,
    prompt,
    run_ended,
    wait_for_message,
)


def _statuses(client: TestClient, sid: str) -> list[dict]:
    return [m["content"] for m in messages(client, sid) if m["content"]["type"] == "status"]


def _backdate(client: TestClient, sid: str, minutes: float) -> None:
    state = client.app.state.agent_sessions

    async def write() -> None:
        async with state.db.write() as db, db.begin():
            when = datetime.now(UTC) - timedelta(minutes=minutes)
            await db.execute(
                update(SessionRecord).where(SessionRecord.id == sid).values(last_activity_at=when)
            )

    client.portal.call(write)


def test_idle_sweep_completes_only_idle_sessions(make_settings) -> None:
    with TestClient(create_app(make_settings(AGENT_SESSION_IDLE_TIMEOUT=1))) as client:
        repo = client.get("/api/repos").json()["repos"][0]["id"]
        idle = create_session(client, repo)["id"]
        busy = create_session(client, repo)["id"]
        pid = live_agent_pid(client, idle)
        _backdate(client, idle, 5)
        _backdate(client, busy, 0.5)  # used half a minute ago: not idle yet
        sessions = client.app.state.agent_sessions.sessions
        assert client.portal.call(sessions.supervisor.sweep_idle) == [idle]
        record = client.get(f"/api/sessions/{idle}").json()
        assert record["status"] == "completed"
        assert _statuses(client, idle)[-1] == {
            "type": "status",
            "status": "completed",
            "reason": "idle_timeout",
            "detail": {},
        }
        assert record["updatedAt"] > record["createdAt"]
        assert pid_gone(pid)
        assert client.get(f"/api/sessions/{busy}").json()["status"] == "active"


def test_idle_sweeper_runs_in_the_background(make_settings) -> None:
    settings = make_settings(AGENT_SESSION_IDLE_TIMEOUT=0.002, IDLE_SWEEP_INTERVAL=0.05)
    with TestClient(create_app(settings)) as client:
        repo = client.get("/api/repos").json()["repos"][0]["id"]
        sid = create_session(client, repo)["id"]
        wait_for_message(client, sid, is_type("status", status="completed", reason="idle_timeout"))
        assert client.get(f"/api/sessions/{sid}").json()["status"] == "completed"


def test_crash_mid_turn_marks_session_error_and_keeps_messages(
    client: TestClient, demo_repo_id: str
) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    pid = live_agent_pid(client, sid)
    run = prompt(client, sid, "crash")
    wait_for_message(client, sid, is_type("status", status="error"))
    status = _statuses(client, sid)[-1]
    assert status["reason"] == "agent_exited"
    assert status["detail"]["exitCode"] == 3
    assert "crashing on purpose" in status["detail"]["stderrTail"]
    run_end = wait_for_message(client, sid, run_ended(run))["content"]
    assert run_end["status"] == "failed"
    texts = [
        m for m in messages(client, sid) if m["content"]["type"] == "text" and m["role"] == "agent"
    ]
    assert texts, "the chunks streamed before the crash stay stored"
    assert client.get(f"/api/sessions/{sid}").json()["status"] == "error"
    assert client.get(f"/api/agent-runs/{run}").json()["status"] == "failed"
    assert pid_gone(pid)
    # The slot is free: the session is no longer active.
    assert client.get("/api/sessions", params={"status": "active"}).json()["total"] == 0


def test_stop_escalates_to_sigkill_for_an_agent_that_ignores_sigterm(
    client: TestClient, demo_repo_id: str
) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    pid = live_agent_pid(client, sid)
    run = prompt(client, sid, "ignore-sigterm hang")
    wait_for_message(client, sid, lambda m: m["content"]["type"] == "text" and m["runId"] == run)
    started = time.monotonic()
    response = client.delete(f"/api/sessions/{sid}")
    elapsed = time.monotonic() - started
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    grace = client.app.state.agent_sessions.settings.agent_stop_grace
    assert elapsed < 4 * grace + 3, elapsed  # polite, stdin, SIGTERM, SIGKILL: bounded
    assert pid_gone(pid)
    assert wait_for_message(client, sid, run_ended(run))["content"]["status"] == "cancelled"
    assert _statuses(client, sid)[-1]["reason"] == "user_request"


def test_stop_leaves_no_grandchild_and_no_zombie(client: TestClient, demo_repo_id: str) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    pid = live_agent_pid(client, sid)
    run = prompt(client, sid, "grandchildren")
    wait_for_message(client, sid, run_ended(run))
    text = next(
        m["content"]["text"]
        for m in messages(client, sid, partial="false")
        if m["content"]["type"] == "text" and "grandchildren:" in m["content"]["text"]
    )
    grandchildren = [int(p) for p in text.split("grandchildren:")[1].split()[:2]]
    assert all(process_state(p) not in (None, "Z") for p in grandchildren)
    assert client.post(f"/api/sessions/{sid}/complete").status_code == 200
    for p in [pid, *grandchildren]:
        assert process_state(p) is None, (p, process_state(p))


def test_garbage_lines_are_skipped(client: TestClient, demo_repo_id: str) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    run = prompt(client, sid, "garbage")
    assert wait_for_message(client, sid, run_ended(run))["content"]["status"] == "completed"


@pytest.mark.parametrize("command", ["huge-line 3000000", "stderr-flood 20"])
def test_big_lines_and_stderr_floods_work(
    client: TestClient, demo_repo_id: str, command: str
) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    run = prompt(client, sid, command)
    assert (
        wait_for_message(client, sid, run_ended(run), timeout=60)["content"]["status"]
        == "completed"
    )
    if command.startswith("huge"):
        longest = max(len(m["content"].get("text", "")) for m in messages(client, sid))
        assert longest >= 3_000_000


@pytest.mark.parametrize("command", ["huge-line 3000000", "endless-line"])
def test_line_over_the_limit_ends_the_session_as_error(make_settings, command: str) -> None:
    with TestClient(create_app(make_settings(MAX_AGENT_LINE_BYTES=1_000_000))) as client:
        repo = client.get("/api/repos").json()["repos"][0]["id"]
        sid = create_session(client, repo)["id"]
        pid = live_agent_pid(client, sid)
        prompt(client, sid, command)
        wait_for_message(client, sid, is_type("status", status="error"), timeout=60)
        status = _statuses(client, sid)[-1]
        assert status["reason"] == "agent_protocol_error"
        assert "over the limit" in status["detail"]["message"]
        assert pid_gone(pid)


def test_unanswered_permission_is_rejected_after_the_timeout(make_settings, workspace_root) -> None:
    with TestClient(create_app(make_settings(PERMISSION_TIMEOUT=0.3))) as client:
        repo = client.get("/api/repos").json()["repos"][0]["id"]
        sid = create_session(client, repo)["id"]
        run = prompt(client, sid, "write notes.txt hello")
        wait_for_message(client, sid, run_ended(run))
        decided = [
            m["content"] for m in messages(client, sid) if m["content"]["type"] == "permission"
        ]
        assert decided[0]["outcome"] is None
        assert decided[-1]["outcome"] == {"outcome": "selected", "optionId": "reject"}
        assert decided[-1]["reason"] == "timeout"
        assert not (workspace_root / "demo" / "notes.txt").exists()


def test_cancel_answers_pending_permissions_cancelled(
    client: TestClient, demo_repo_id: str, workspace_root
) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    run = prompt(client, sid, "write notes.txt hello")
    wait_for_message(client, sid, is_type("permission", outcome=None))
    assert client.post(f"/api/sessions/{sid}/cancel").status_code == 202
    end = wait_for_message(client, sid, run_ended(run))["content"]
    assert end["status"] == "cancelled"
    decided = [m["content"] for m in messages(client, sid) if m["content"]["type"] == "permission"]
    assert decided[-1]["outcome"] == {"outcome": "cancelled"}
    assert not (workspace_root / "demo" / "notes.txt").exists()
    tools = [m["content"] for m in messages(client, sid) if m["content"]["type"] == "tool"]
    assert {t["status"] for t in tools if t["toolCallId"] == "call_2"} >= {"cancelled"}


def test_permission_without_a_preceding_tool_call(client: TestClient, demo_repo_id: str) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    run = prompt(client, sid, "ask-permission-bare")
    request = wait_for_message(client, sid, is_type("permission", outcome=None))["content"]
    assert request["toolCallId"] == "call_bare"
    allow = next(o["optionId"] for o in request["options"] if o["kind"] == "allow_once")
    answer = client.post(
        f"/api/sessions/{sid}/permissions/{request['requestId']}", json={"optionId": allow}
    )
    assert answer.status_code == 200
    assert wait_for_message(client, sid, run_ended(run))["content"]["status"] == "completed"
    tools = [m["content"] for m in messages(client, sid) if m["content"]["type"] == "tool"]
    assert tools[-1]["toolCallId"] == "call_bare" and tools[-1]["status"] == "completed"


def test_agent_cannot_ignore_cancel_forever(client: TestClient, demo_repo_id: str) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    run = prompt(client, sid, "hang")
    wait_for_message(client, sid, lambda m: m["content"]["type"] == "text" and m["runId"] == run)
    assert client.post(f"/api/sessions/{sid}/cancel").status_code == 202
    assert wait_for_message(client, sid, run_ended(run))["content"]["status"] == "cancelled"


def test_demo_mode_env_reaches_the_agent(make_settings) -> None:
    with TestClient(
        create_app(make_settings(AGENT_COMMAND=demo_command(DEMO_AGENT_MODE="crash")))
    ) as client:
        repo = client.get("/api/repos").json()["repos"][0]["id"]
        sid = create_session(client, repo)["id"]
        prompt(client, sid, "hello")
        wait_for_message(client, sid, is_type("status", status="error"))
