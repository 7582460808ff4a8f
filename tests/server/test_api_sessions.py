"""API.md, Sessions (without fork, rewind, transcript, export): every endpoint and every
error it can return, through the TestClient against the demo agent."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from server.app import create_app
from server.settings import Settings
from tests.helpers import (
    assert_error,
    create_session,
    is_type,
    live_agent_pid,
    messages,
    pid_gone,
    prompt,
    run_ended,
    wait_for_message,
)
from tests.server.test_api_repos import UNKNOWN_ID

SESSION_KEYS = {
    "id",
    "repoId",
    "repo",
    "agentId",
    "status",
    "title",
    "createdAt",
    "updatedAt",
    "lastSeq",
    "activeRunId",
    "parentRunId",
    "forkedFrom",
    "metadata",
    "workspace",
    "controls",
    "sandbox",
    "owner",  # API.md "Users and access"
    "visibility",
    # API.md "Finding and keeping sessions"
    "titleSource",
    "archived",
    "lastActivityAt",
}
MESSAGE_KEYS = {"id", "sessionId", "runId", "seq", "role", "content", "stepNumber", "timestamp"}


def finish(client: TestClient, session_id: str, run_id: str) -> dict[str, Any]:
    """Wait until the run ended; its final run message content."""
    return wait_for_message(client, session_id, run_ended(run_id))["content"]


def agent_is_talking(run_id: str) -> Callable[[dict[str, Any]], bool]:
    """The agent's turn has begun: a text chunk of this run is stored. (Cancelling before
    that races the demo agent's start of the turn; see test_acp_client.)"""
    return lambda m: (
        m["role"] == "agent" and m["content"]["type"] == "text" and m["runId"] == run_id
    )


def cancel_and_finish(client: TestClient, session_id: str, run_id: str) -> dict[str, Any]:
    wait_for_message(client, session_id, agent_is_talking(run_id))
    assert client.post(f"/api/sessions/{session_id}/cancel").status_code == 202
    return finish(client, session_id, run_id)


# -- POST /api/sessions ------------------------------------------------------------------


def test_create(client: TestClient, demo_repo_id: str, workspace_root: Path) -> None:
    response = client.post("/api/sessions", json={"repoId": demo_repo_id, "title": "first"})
    assert response.status_code == 201, response.text
    session = response.json()
    assert set(session) == SESSION_KEYS
    uuid.UUID(session["id"])
    assert session["status"] == "active"
    assert session["repoId"] == demo_repo_id and session["repo"]["id"] == demo_repo_id
    assert session["agentId"] == "default"
    assert session["title"] == "first"
    assert session["activeRunId"] is None and session["forkedFrom"] is None
    assert session["createdAt"].endswith("Z") and session["updatedAt"].endswith("Z")
    # The agent answered initialize and session/new: it runs, in the repository.
    pid = live_agent_pid(client, session["id"])
    assert Path(f"/proc/{pid}/cwd").resolve() == (workspace_root / "demo").resolve()
    # Its status change is stored, too.
    first = messages(client, session["id"])
    assert [m["content"]["type"] for m in first] == ["status"]
    assert first[0]["content"]["status"] == "active"
    assert session["lastSeq"] == first[0]["seq"] == 1


def test_create_unknown_repo_is_404(client: TestClient) -> None:
    error = assert_error(
        client.post("/api/sessions", json={"repoId": UNKNOWN_ID}), 404, "repo_not_found"
    )
    assert error["details"]["id"] == UNKNOWN_ID


def test_create_unknown_agent_is_404(client: TestClient, demo_repo_id: str) -> None:
    response = client.post("/api/sessions", json={"repoId": demo_repo_id, "agentId": "nope"})
    assert_error(response, 404, "agent_not_found")
    assert client.get("/api/sessions").json()["sessions"] == []


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"repoId": "not-a-uuid"},
        {"repoId": 5},
        {"repoId": "{repo}", "title": 5},
        {"repoId": "{repo}", "agentId": 1},
        {"repoId": "{repo}", "parentRunId": "nope"},
    ],
)
def test_create_invalid_is_422(client: TestClient, demo_repo_id: str, body: dict[str, Any]) -> None:
    body = {k: v.format(repo=demo_repo_id) if isinstance(v, str) else v for k, v in body.items()}
    assert_error(client.post("/api/sessions", json=body), 422, "validation_error")
    assert client.get("/api/sessions").json()["sessions"] == []


def test_create_bad_json_is_400(client: TestClient) -> None:
    assert_error(
        client.post("/api/sessions", content=b"{", headers={"content-type": "application/json"}),
        400,
        "invalid_json",
    )


def test_create_over_the_limit_is_429(make_settings: Callable[..., Settings]) -> None:
    with TestClient(create_app(make_settings(MAX_CONCURRENT_SESSIONS=1))) as c:
        repo_id = c.get("/api/repos").json()["repos"][0]["id"]
        first = create_session(c, repo_id)
        response = c.post("/api/sessions", json={"repoId": repo_id})
        error = assert_error(response, 429, "session_limit_reached")
        assert response.headers["retry-after"] == "60"
        assert "1" in error["message"] and "wait" in error["message"].lower()
        # Only active sessions count.
        assert c.post(f"/api/sessions/{first['id']}/complete").status_code == 200
        create_session(c, repo_id)


def test_agent_that_cannot_start_is_502(make_settings: Callable[..., Settings]) -> None:
    command = (
        f"{sys.executable} -c \"import sys; print('no model here', file=sys.stderr); sys.exit(3)\""
    )
    with TestClient(create_app(make_settings(AGENT_COMMAND=command))) as c:
        repo_id = c.get("/api/repos").json()["repos"][0]["id"]
        error = assert_error(
            c.post("/api/sessions", json={"repoId": repo_id}), 502, "agent_start_failed"
        )
        assert "3" in error["message"]
        assert error["details"]["exitCode"] == 3
        assert "no model here" in error["details"]["stderrTail"]
        (session,) = c.get("/api/sessions").json()["sessions"]
        assert session["status"] == "error"
        status = messages(c, session["id"], type="status")[-1]["content"]
        assert (status["status"], status["reason"]) == ("error", "agent_start_failed")


# -- GET /api/sessions -------------------------------------------------------------------


def test_list_filters_and_offset(
    make_settings: Callable[..., Settings], workspace_root: Path
) -> None:
    (workspace_root / "other").mkdir()
    with TestClient(create_app(make_settings(MAX_CONCURRENT_SESSIONS=10))) as c:
        demo = c.get("/api/repos").json()["repos"][0]["id"]
        other = c.post("/api/repos", json={"path": "other"}).json()["id"]
        s1 = create_session(c, demo)
        s2 = create_session(c, other)
        s3 = create_session(c, demo)
        assert c.post(f"/api/sessions/{s1['id']}/complete").status_code == 200
        assert c.delete(f"/api/sessions/{s2['id']}").status_code == 200

        def ids(**params: Any) -> list[str]:
            response = c.get("/api/sessions", params=params)
            assert response.status_code == 200, response.text
            body = response.json()
            listed = SESSION_KEYS | {"runCount", "usage"}
            assert all(set(s) == listed for s in body["sessions"])
            return [s["id"] for s in body["sessions"]]

        assert ids() == [s3["id"], s2["id"], s1["id"]]  # newest first
        assert ids(repoId=demo) == [s3["id"], s1["id"]]
        assert ids(status="active") == [s3["id"]]
        assert ids(status="completed,cancelled") == [s2["id"], s1["id"]]
        assert ids(status="error") == []
        assert ids(agentId="default") == [s3["id"], s2["id"], s1["id"]]
        assert ids(agentId="other") == []
        assert ids(repoId=demo, status="completed") == [s1["id"]]
        page = c.get("/api/sessions", params={"limit": 1, "offset": 1}).json()
        assert [s["id"] for s in page["sessions"]] == [s2["id"]]
        assert (page["total"], page["limit"], page["offset"]) == (3, 1, 1)
        assert page["nextCursor"] is not None
        last = c.get("/api/sessions", params={"limit": 1, "offset": 2}).json()
        assert [s["id"] for s in last["sessions"]] == [s1["id"]] and last["nextCursor"] is None
        assert c.get("/api/sessions", params={"status": "active"}).json()["total"] == 1
        assert c.get("/api/sessions", params={"repoId": demo}).json()["total"] == 2
        assert "messages" not in c.get("/api/sessions").json()["sessions"][0]


def test_list_cursor_paging_is_stable_while_sessions_are_added(
    make_settings: Callable[..., Settings],
) -> None:
    with TestClient(create_app(make_settings(MAX_CONCURRENT_SESSIONS=20))) as c:
        repo_id = c.get("/api/repos").json()["repos"][0]["id"]
        before = [create_session(c, repo_id)["id"] for _ in range(4)]
        page = c.get("/api/sessions", params={"limit": 2}).json()
        assert page["limit"] == 2 and len(page["sessions"]) == 2 and page["total"] == len(before)
        seen = [s["id"] for s in page["sessions"]]
        added: list[str] = []
        while page["nextCursor"] is not None:
            added.append(create_session(c, repo_id)["id"])  # newer: must not shift the pages
            response = c.get("/api/sessions", params={"limit": 2, "cursor": page["nextCursor"]})
            assert response.status_code == 200, response.text
            page = response.json()
            seen += [s["id"] for s in page["sessions"]]
        assert seen == list(reversed(before))  # every one, once, newest first
        assert len(set(seen)) == len(seen)
        fresh = c.get("/api/sessions", params={"limit": 200}).json()
        assert [s["id"] for s in fresh["sessions"]] == list(reversed(before + added))


def test_list_total_without_filters(make_settings: Callable[..., Settings]) -> None:
    with TestClient(create_app(make_settings(MAX_CONCURRENT_SESSIONS=10))) as c:
        repo_id = c.get("/api/repos").json()["repos"][0]["id"]
        assert c.get("/api/sessions").json()["total"] == 0
        for _ in range(3):
            create_session(c, repo_id)
        page = c.get("/api/sessions", params={"limit": 1}).json()
        assert len(page["sessions"]) == 1
        assert page["total"] == 3


@pytest.mark.parametrize(
    "params",
    [
        {"limit": 0},
        {"limit": 201},
        {"limit": "x"},
        {"offset": -1},
        {"status": "bogus"},
        {"status": "active,bogus"},
        {"repoId": "nope"},
        {"cursor": "not-a-cursor"},
        {"cursor": "WzFd"},
    ],
)
def test_list_invalid_query_is_422(client: TestClient, params: dict[str, Any]) -> None:
    assert_error(client.get("/api/sessions", params=params), 422, "validation_error")


def test_list_limit_bounds(client: TestClient) -> None:
    assert client.get("/api/sessions").json()["limit"] == 20
    assert client.get("/api/sessions", params={"limit": 200}).status_code == 200
    assert client.get("/api/sessions", params={"limit": 1}).status_code == 200


# -- GET /api/sessions/{id} --------------------------------------------------------------


def test_get_with_finished_messages_only(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    run_id = prompt(client, session["id"], "hello there")
    assert finish(client, session["id"], run_id)["status"] == "completed"
    response = client.get(f"/api/sessions/{session['id']}")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == SESSION_KEYS | {"messages"}
    shown = body["messages"]
    stored = messages(client, session["id"])
    assert any(m["content"].get("partial") is True for m in stored)  # the log has chunks...
    assert all(m["content"].get("partial") is not True for m in shown)  # ...the session view not
    assert shown == [m for m in stored if m["content"].get("partial") is not True]
    assert [m["seq"] for m in shown] == sorted(m["seq"] for m in shown)
    assert all(set(m) == MESSAGE_KEYS for m in shown)
    texts = [
        m["content"]["text"]
        for m in shown
        if m["role"] == "agent" and m["content"]["type"] == "text"
    ]
    assert len(texts) == 1 and "You said: hello there" in texts[0]
    assert body["lastSeq"] == stored[-1]["seq"]


def test_get_unknown_is_404_and_bad_id_422(client: TestClient) -> None:
    assert_error(client.get(f"/api/sessions/{UNKNOWN_ID}"), 404, "session_not_found")
    assert_error(client.get("/api/sessions/xyz"), 422, "validation_error")
    for method, tail in [
        ("POST", "prompt"),
        ("POST", "cancel"),
        ("POST", "complete"),
        ("GET", "messages"),
    ]:
        response = client.request(method, f"/api/sessions/{UNKNOWN_ID}/{tail}", json={"text": "x"})
        assert_error(response, 404, "session_not_found")
    assert_error(client.delete(f"/api/sessions/{UNKNOWN_ID}"), 404, "session_not_found")


# -- POST /api/sessions/{id}/prompt ------------------------------------------------------


def test_prompt_is_202_and_the_user_message_is_stored_first(
    client: TestClient, demo_repo_id: str
) -> None:
    session = create_session(client, demo_repo_id)
    response = client.post(f"/api/sessions/{session['id']}/prompt", json={"text": "first words"})
    assert response.status_code == 202
    body = response.json()
    assert body["sessionId"] == session["id"]
    uuid.UUID(body["runId"])
    # Read right after the 202: no waiting.
    users = messages(client, session["id"], role="user")
    assert [(m["content"], m["runId"]) for m in users] == [
        ({"type": "text", "text": "first words"}, body["runId"])
    ]
    assert finish(client, session["id"], body["runId"])["status"] == "completed"


def test_second_prompt_during_a_turn_is_409(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    run_id = prompt(client, session["id"], "slow 30")
    assert client.get(f"/api/sessions/{session['id']}").json()["activeRunId"] == run_id
    assert_error(
        client.post(f"/api/sessions/{session['id']}/prompt", json={"text": "again"}),
        409,
        "turn_in_progress",
    )
    assert [m["content"]["text"] for m in messages(client, session["id"], role="user")] == [
        "slow 30"
    ]
    assert cancel_and_finish(client, session["id"], run_id)["status"] == "cancelled"


@pytest.mark.parametrize("body", [{}, {"text": ""}, {"text": "   \n"}, {"text": 5}, {"text": None}])
def test_prompt_without_text_is_422(
    client: TestClient, demo_repo_id: str, body: dict[str, Any]
) -> None:
    session = create_session(client, demo_repo_id)
    assert_error(
        client.post(f"/api/sessions/{session['id']}/prompt", json=body), 422, "validation_error"
    )
    assert messages(client, session["id"], role="user") == []


def test_prompt_bad_json_is_400(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    response = client.post(
        f"/api/sessions/{session['id']}/prompt",
        content=b"text=hi",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert_error(response, 400, "invalid_json")


def test_prompt_over_max_prompt_bytes_is_413(make_settings: Callable[..., Settings]) -> None:
    with TestClient(create_app(make_settings(MAX_PROMPT_BYTES=16, MAX_BODY_BYTES=1024))) as c:
        repo_id = c.get("/api/repos").json()["repos"][0]["id"]
        session = create_session(c, repo_id)
        url = f"/api/sessions/{session['id']}/prompt"
        error = assert_error(
            c.post(url, json={"text": "é" * 9}), 413, "payload_too_large"
        )  # 18 bytes
        assert error["details"]["limit"] == 16
        assert_error(
            c.post(url, json={"text": "x" * 2000}), 413, "payload_too_large"
        )  # over the body limit
        assert messages(c, session["id"], role="user") == []
        run_id = prompt(c, session["id"], "x" * 16)  # exactly at the limit is fine
        assert finish(c, session["id"], run_id)["status"] == "completed"


# -- cancel, complete, delete ------------------------------------------------------------


def test_cancel_ends_the_run_cancelled_and_the_session_stays_active(
    client: TestClient, demo_repo_id: str
) -> None:
    session = create_session(client, demo_repo_id)
    run_id = prompt(client, session["id"], "slow 30")
    wait_for_message(client, session["id"], agent_is_talking(run_id))
    response = client.post(f"/api/sessions/{session['id']}/cancel")
    assert response.status_code == 202
    end = finish(client, session["id"], run_id)
    assert end["status"] == "cancelled"
    assert end["stopReason"] == "cancelled"
    after = client.get(f"/api/sessions/{session['id']}").json()
    assert after["status"] == "active" and after["activeRunId"] is None
    # The session takes the next prompt.
    assert (
        finish(client, session["id"], prompt(client, session["id"], "hi"))["status"] == "completed"
    )
    # Cancel with no turn running is harmless.
    assert client.post(f"/api/sessions/{session['id']}/cancel").status_code == 202


def test_complete(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    pid = live_agent_pid(client, session["id"])
    response = client.post(f"/api/sessions/{session['id']}/complete")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == SESSION_KEYS
    assert body["status"] == "completed"
    assert pid_gone(pid)  # the agent process was stopped (and reaped) before the answer
    status = messages(client, session["id"], type="status")[-1]["content"]
    assert (status["status"], status["reason"]) == ("completed", "user_request")
    assert client.get(f"/api/sessions/{session['id']}").json()["status"] == "completed"


def test_ended_session_refuses_everything_with_409(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    assert client.post(f"/api/sessions/{session['id']}/complete").status_code == 200
    base = f"/api/sessions/{session['id']}"
    assert_error(client.post(f"{base}/prompt", json={"text": "hi"}), 409, "session_not_active")
    assert_error(client.post(f"{base}/cancel"), 409, "session_not_active")
    assert_error(client.post(f"{base}/complete"), 409, "session_not_active")
    assert_error(client.delete(base), 409, "session_not_active")
    assert client.get(base).json()["status"] == "completed"


def test_delete_during_a_turn(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    pid = live_agent_pid(client, session["id"])
    run_id = prompt(client, session["id"], "slow 30")
    wait_for_message(client, session["id"], agent_is_talking(run_id))
    response = client.delete(f"/api/sessions/{session['id']}")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "cancelled" and body["activeRunId"] is None
    assert pid_gone(pid)
    stored = messages(client, session["id"])
    run_end = [m["content"] for m in stored if run_ended(run_id)(m)]
    assert [r["status"] for r in run_end] == ["cancelled"]
    status = [m["content"] for m in stored if m["content"]["type"] == "status"][-1]
    assert (status["status"], status["reason"]) == ("cancelled", "user_request")
    assert stored[-1]["content"] == status  # the last word
    seqs = [m["seq"] for m in stored]
    assert seqs == list(range(1, len(seqs) + 1))


# -- GET /api/sessions/{id}/messages ------------------------------------------------------


@pytest.fixture
def finished_session(client: TestClient, demo_repo_id: str) -> str:
    session = create_session(client, demo_repo_id)
    run_id = prompt(client, session["id"], "hello")
    assert finish(client, session["id"], run_id)["status"] == "completed"
    return str(session["id"])


def test_messages_paging_with_after_limit_next_after(
    client: TestClient, finished_session: str
) -> None:
    everything = messages(client, finished_session)
    assert [m["seq"] for m in everything] == list(range(1, len(everything) + 1))
    collected: list[dict[str, Any]] = []
    after = 0
    while True:
        response = client.get(
            f"/api/sessions/{finished_session}/messages", params={"after": after, "limit": 4}
        )
        assert response.status_code == 200
        page = response.json()
        assert len(page["messages"]) <= 4
        collected += page["messages"]
        if page["nextAfter"] is None:
            break
        assert page["nextAfter"] == page["messages"][-1]["seq"]
        after = page["nextAfter"]
    assert collected == everything
    tail = client.get(
        f"/api/sessions/{finished_session}/messages", params={"after": everything[-3]["seq"]}
    ).json()
    assert tail == {"messages": everything[-2:], "nextAfter": None}
    assert messages(client, finished_session, after=everything[-1]["seq"]) == []


def test_messages_filters(client: TestClient, finished_session: str) -> None:
    everything = messages(client, finished_session)
    assert {m["role"] for m in messages(client, finished_session, role="user")} == {"user"}
    assert [m for m in everything if m["role"] == "agent"] == messages(
        client, finished_session, role="agent"
    )
    tools = messages(client, finished_session, type="tool")
    assert tools and tools == [m for m in everything if m["content"]["type"] == "tool"]
    whole = messages(client, finished_session, partial="false")
    assert whole == [m for m in everything if m["content"].get("partial") is not True]
    assert messages(client, finished_session, partial="true") == everything
    assert messages(client, finished_session, type="text", role="agent", partial="false") == [
        m
        for m in everything
        if m["role"] == "agent" and m["content"]["type"] == "text" and not m["content"]["partial"]
    ]


def test_messages_since_is_strictly_after(client: TestClient, finished_session: str) -> None:
    everything = messages(client, finished_session)
    assert all(m["timestamp"].endswith("Z") for m in everything)
    for pivot in (everything[0], everything[len(everything) // 2]):
        since = pivot["timestamp"]
        got = messages(client, finished_session, since=since)
        assert got == [m for m in everything if m["timestamp"] > since], since
        assert pivot not in got
    assert messages(client, finished_session, since=everything[-1]["timestamp"]) == []
    assert messages(client, finished_session, since="2000-01-01T00:00:00Z") == everything
    # An offset other than Z means the same instant.
    assert messages(client, finished_session, since="2000-01-01T01:00:00+01:00") == everything


@pytest.mark.parametrize(
    "params",
    [
        {"after": -1},
        {"after": "x"},
        {"limit": 0},
        {"limit": "x"},
        {"role": "robot"},
        {"type": "bogus"},
        {"partial": "maybe"},
        {"since": "yesterday"},
        {"raw": "perhaps"},
    ],
)
def test_messages_invalid_query_is_422(
    client: TestClient, finished_session: str, params: dict[str, Any]
) -> None:
    response = client.get(f"/api/sessions/{finished_session}/messages", params=params)
    assert_error(response, 422, "validation_error")


def test_messages_several_roles_or_types_are_not_silently_narrowed(
    client: TestClient, finished_session: str
) -> None:
    """role=user,agent must not quietly return only the user messages."""
    everything = messages(client, finished_session)
    response = client.get(
        f"/api/sessions/{finished_session}/messages", params={"role": "user,agent"}
    )
    if response.status_code == 200:
        assert response.json()["messages"] == [
            m for m in everything if m["role"] in ("user", "agent")
        ]
    else:
        assert_error(response, 422, "validation_error")
    response = client.get(
        f"/api/sessions/{finished_session}/messages", params={"type": "tool,plan"}
    )
    if response.status_code == 200:
        assert response.json()["messages"] == [
            m for m in everything if m["content"]["type"] in ("tool", "plan")
        ]
    else:
        assert_error(response, 422, "validation_error")


# -- permissions ---------------------------------------------------------------------------


def ask_permission(client: TestClient, session_id: str, text: str) -> tuple[str, dict[str, Any]]:
    run_id = prompt(client, session_id, text)
    message = wait_for_message(client, session_id, is_type("permission", outcome=None))
    return run_id, message["content"]


def test_permission_allow_writes_the_file(
    client: TestClient, demo_repo_id: str, workspace_root: Path
) -> None:
    session = create_session(client, demo_repo_id)
    run_id, asked = ask_permission(client, session["id"], "write notes.txt hi")
    assert asked["toolCallId"] == "call_2"
    assert {o["optionId"] for o in asked["options"]} >= {"allow", "reject"}
    uuid.UUID(asked["requestId"])
    assert not (workspace_root / "demo" / "notes.txt").exists()  # nothing before the answer
    url = f"/api/sessions/{session['id']}/permissions/{asked['requestId']}"
    response = client.post(url, json={"optionId": "allow"})
    assert response.status_code == 200, response.text
    assert finish(client, session["id"], run_id)["status"] == "completed"
    assert (workspace_root / "demo" / "notes.txt").read_text() == "hi"
    decided = [m["content"] for m in messages(client, session["id"], type="permission")]
    assert decided[-1]["requestId"] == asked["requestId"]
    assert decided[-1]["outcome"] == {"outcome": "selected", "optionId": "allow"}
    tool = [
        m["content"]
        for m in messages(client, session["id"], type="tool")
        if m["content"]["toolCallId"] == "call_2"
    ]
    assert tool[-1]["status"] == "completed"
    # The first answer won; a later one is refused.
    assert_error(client.post(url, json={"optionId": "reject"}), 409, "permission_already_decided")
    assert (workspace_root / "demo" / "notes.txt").read_text() == "hi"


def test_permission_reject_writes_nothing(
    client: TestClient, demo_repo_id: str, workspace_root: Path
) -> None:
    session = create_session(client, demo_repo_id)
    run_id, asked = ask_permission(client, session["id"], "write notes.txt hi")
    url = f"/api/sessions/{session['id']}/permissions/{asked['requestId']}"
    assert client.post(url, json={"optionId": "reject"}).status_code == 200
    assert finish(client, session["id"], run_id)["status"] == "completed"
    assert not (workspace_root / "demo" / "notes.txt").exists()
    tool = [
        m["content"]
        for m in messages(client, session["id"], type="tool")
        if m["content"]["toolCallId"] == "call_2"
    ]
    assert tool[-1]["status"] == "error"
    assert_error(client.post(url, json={"optionId": "allow"}), 409, "permission_already_decided")
    assert not (workspace_root / "demo" / "notes.txt").exists()


def test_permission_errors(client: TestClient, demo_repo_id: str, workspace_root: Path) -> None:
    session = create_session(client, demo_repo_id)
    base = f"/api/sessions/{session['id']}/permissions"
    assert_error(
        client.post(f"{base}/{UNKNOWN_ID}", json={"optionId": "allow"}), 404, "permission_not_found"
    )
    assert_error(client.post(f"{base}/nope", json={"optionId": "allow"}), 422, "validation_error")
    run_id, asked = ask_permission(client, session["id"], "write notes.txt hi")
    url = f"{base}/{asked['requestId']}"
    assert_error(client.post(url, json={}), 422, "validation_error")
    assert_error(client.post(url, json={"optionId": "maybe"}), 422, "validation_error")
    assert_error(
        client.post(url, content=b"{", headers={"content-type": "application/json"}),
        400,
        "invalid_json",
    )
    # A request of this session is unknown in another one.
    other = create_session(client, demo_repo_id)
    response = client.post(
        f"/api/sessions/{other['id']}/permissions/{asked['requestId']}", json={"optionId": "allow"}
    )
    assert_error(response, 404, "permission_not_found")
    # Still pending after all that.
    assert client.post(url, json={"optionId": "allow"}).status_code == 200
    assert finish(client, session["id"], run_id)["status"] == "completed"
    assert (workspace_root / "demo" / "notes.txt").read_text() == "hi"


def test_cancel_answers_pending_permissions_cancelled(
    client: TestClient, demo_repo_id: str, workspace_root: Path
) -> None:
    session = create_session(client, demo_repo_id)
    run_id, asked = ask_permission(client, session["id"], "write notes.txt hi")
    assert client.post(f"/api/sessions/{session['id']}/cancel").status_code == 202
    assert finish(client, session["id"], run_id)["status"] == "cancelled"
    decided = [m["content"] for m in messages(client, session["id"], type="permission")]
    assert decided[-1]["outcome"] == {"outcome": "cancelled"}
    url = f"/api/sessions/{session['id']}/permissions/{asked['requestId']}"
    assert_error(client.post(url, json={"optionId": "allow"}), 409, "permission_already_decided")
    assert not (workspace_root / "demo" / "notes.txt").exists()
