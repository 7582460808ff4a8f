"""The history API: cursor pagination (stable while rows are added), filters, 422 for
bad cursors and filter values, 404 for unknown ids."""

from __future__ import annotations

import base64
import json
import re
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from server.app import create_app
from tests.conftest import make_git_repo
from tests.helpers import create_session, messages, prompt, wait_for_message
from tests.runs.support import (
    all_pages,
    demo_repo,
    finished_run,
    get_ok,
    page,
    permission_message,
    tool_calls,
)

SCRIPT_AGENT = f"{sys.executable} {Path(__file__).with_name('script_agent.py')}"


def forge(parts: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(parts).encode()).decode().rstrip("=")


@pytest.fixture
def script_client(make_settings: Callable[..., Any]) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings(AGENT_COMMAND=SCRIPT_AGENT))) as client:
        yield client


def open_gate(client: TestClient, session_id: str, run_id: str) -> None:
    """Answer the open gate (if any) and wait until the next batch is stored (its gate
    asks again) or the run ended."""
    log = messages(client, session_id)
    answered = {
        m["content"]["requestId"]
        for m in log
        if m["content"]["type"] == "permission" and m["content"]["outcome"] is not None
    }
    open_now = [
        m
        for m in log
        if m["content"]["type"] == "permission" and m["content"]["requestId"] not in answered
    ]
    if not open_now:
        return
    asked = open_now[-1]
    response = client.post(
        f"/api/sessions/{session_id}/permissions/{asked['content']['requestId']}",
        json={"optionId": "allow"},
    )
    assert response.status_code == 200, response.text

    def next_gate_or_end(m: dict[str, Any]) -> bool:
        c = m["content"]
        return m["seq"] > asked["seq"] and (
            (c["type"] == "permission" and c["outcome"] is None)
            or (c["type"] == "run" and c["runId"] == run_id and c["status"] != "running")
        )

    wait_for_message(client, session_id, next_gate_or_end)


# -- pagination ------------------------------------------------------------------------


def test_runs_page_newest_first_while_runs_are_added(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    made = [
        finished_run(client, session["id"], prompt(client, session["id"], "tools 1"))["id"]
        for _ in range(5)
    ]
    added: list[str] = []

    def add_run(index: int) -> None:
        added.append(
            finished_run(client, session["id"], prompt(client, session["id"], "tools 1"))["id"]
        )

    seen = all_pages(client, "/api/agent-runs", 2, between=add_run, sessionId=session["id"])
    assert [r["id"] for r in seen] == made[::-1]  # each once, none skipped, newest first
    assert len(added) == 3
    fresh = [r["id"] for r in all_pages(client, "/api/agent-runs", 3, sessionId=session["id"])]
    assert fresh == (made + added)[::-1]
    created = [r["createdAt"] for r in seen]
    assert created == sorted(created, reverse=True)


def test_run_cursor_is_opaque_and_stable(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    for _ in range(3):
        finished_run(client, session["id"], prompt(client, session["id"], "tools 1"))
    first, cursor = page(client, "/api/agent-runs", limit=1, sessionId=session["id"])
    assert isinstance(cursor, str) and re.fullmatch(
        r"[A-Za-z0-9_-]+", cursor
    )  # URL-safe, nothing readable
    assert first[0]["id"] not in cursor and first[0]["createdAt"][:10] not in cursor
    again, again_cursor = page(
        client, "/api/agent-runs", limit=1, cursor=cursor, sessionId=session["id"]
    )
    finished_run(client, session["id"], prompt(client, session["id"], "tools 1"))  # a newer run
    later, later_cursor = page(
        client, "/api/agent-runs", limit=1, cursor=cursor, sessionId=session["id"]
    )
    assert later == again and later_cursor == again_cursor
    assert again[0]["id"] != first[0]["id"]


def test_tool_calls_page_in_step_order_while_the_run_adds_calls(script_client: TestClient) -> None:
    client = script_client
    session = create_session(client, demo_repo(client))
    run_id = prompt(client, session["id"], "gated 4 3")  # 4 batches of 3 calls and a gate
    permission_message(client, session["id"])
    before = len(tool_calls(client, run_id))
    seen = all_pages(
        client,
        f"/api/agent-runs/{run_id}/tool-calls",
        3,
        between=lambda _: open_gate(client, session["id"], run_id),
    )
    assert before == 4  # the first page was read while only batch 1 existed
    expected = [f"b{i}_{j}" if j <= 3 else f"gate_{i}" for i in range(1, 5) for j in range(1, 5)]
    assert [c["toolCallId"] for c in seen] == expected  # none twice, none skipped
    assert [c["stepNumber"] for c in seen] == list(range(1, 17))
    run = finished_run(client, session["id"], run_id)
    assert (run["status"], run["stepCount"]) == ("completed", 16)


def test_run_messages_page_in_seq_order_while_the_run_adds_messages(
    script_client: TestClient,
) -> None:
    client = script_client
    session = create_session(client, demo_repo(client))
    run_id = prompt(client, session["id"], "gated 3 2")
    permission_message(client, session["id"])
    url = f"/api/agent-runs/{run_id}/messages"
    seen = all_pages(client, url, 4, between=lambda _: open_gate(client, session["id"], run_id))
    finished_run(client, session["id"], run_id)
    stored = [
        m
        for m in messages(client, session["id"])
        if m["runId"] == run_id and not m["content"].get("partial")
    ]
    # More than 3 pages: every gate was opened between two of them, the last one waited
    # for the run's end, and the pages saw each finished message once, in seq order.
    assert len(seen) > 12
    assert [m["id"] for m in seen] == [m["id"] for m in stored]
    assert [m["content"]["type"] for m in seen].count(
        "permission"
    ) == 6  # asked and decided, 3 gates
    everything = all_pages(client, url, 4)
    assert [m["id"] for m in everything] == [m["id"] for m in stored]
    with_partial = all_pages(client, url, 4, partial="true")
    assert [m["seq"] for m in with_partial] == [
        m["seq"] for m in messages(client, session["id"]) if m["runId"] == run_id
    ]
    assert any(m["content"].get("partial") for m in with_partial)


def test_single_message_endpoint_returns_the_full_message(
    client: TestClient, demo_repo_id: str
) -> None:
    session = create_session(client, demo_repo_id)
    run_id = prompt(client, session["id"], "tools 2")
    finished_run(client, session["id"], run_id)
    listed, _ = page(client, f"/api/agent-runs/{run_id}/messages", limit=1000)
    tool = next(m for m in listed if m["content"]["type"] == "tool")
    one = get_ok(client, f"/api/agent-runs/{run_id}/messages/{tool['id']}")
    assert {k: v for k, v in one.items() if k not in ("raw", "dropped")} == tool
    assert one["raw"]["method"] == "session/update"  # the ACP frame it came from
    assert one["raw"]["params"]["update"]["toolCallId"] == tool["content"]["toolCallId"]


# -- filters -----------------------------------------------------------------------------


def test_run_filters(
    make_settings: Callable[..., Any], workspace_root: Path, tmp_path: Path
) -> None:
    agents = tmp_path / "agents.toml"
    agents.write_text(f'[agents.other]\ncommand = "{SCRIPT_AGENT}"\n')
    make_git_repo(workspace_root / "second")
    with TestClient(create_app(make_settings(AGENTS_FILE=agents))) as client:
        repos = {r["name"]: r["id"] for r in client.get("/api/repos").json()["repos"]}
        a = create_session(client, repos["demo"])
        b = create_session(client, repos["second"], agentId="other")
        done = finished_run(client, a["id"], prompt(client, a["id"], "tools 1"))
        cancelled_id = prompt(client, a["id"], "tools 3 permission")
        permission_message(client, a["id"])
        assert client.post(f"/api/sessions/{a['id']}/cancel").status_code == 202
        cancelled = finished_run(client, a["id"], cancelled_id)
        other = finished_run(client, b["id"], prompt(client, b["id"], "hello"))
        child_session = create_session(client, repos["demo"], parentRunId=done["id"])
        child = finished_run(
            client, child_session["id"], prompt(client, child_session["id"], "tools 1")
        )
        grandchild_session = create_session(
            client, repos["second"], agentId="other", parentRunId=child["id"]
        )
        grandchild = finished_run(
            client, grandchild_session["id"], prompt(client, grandchild_session["id"], "x")
        )
        running_id = prompt(client, child_session["id"], "slow 50")

        def ids(**params: Any) -> set[str]:
            return {r["id"] for r in all_pages(client, "/api/agent-runs", 2, **params)}

        everything = {
            done["id"],
            cancelled["id"],
            other["id"],
            child["id"],
            grandchild["id"],
            running_id,
        }
        assert ids() == everything
        assert ids(status="completed") == {done["id"], other["id"], child["id"], grandchild["id"]}
        assert ids(status="cancelled") == {cancelled["id"]}
        assert ids(status="running") == {running_id}
        assert ids(status="cancelled,running") == {cancelled["id"], running_id}
        assert ids(status="paused") == set()
        assert ids(agentId="other") == {other["id"], grandchild["id"]}
        assert ids(agentId="default") == everything - {other["id"], grandchild["id"]}
        assert ids(agentId="nobody") == set()  # agent ids are free text: old runs stay findable
        assert ids(repoId=repos["second"]) == {other["id"], grandchild["id"]}
        assert ids(sessionId=a["id"]) == {done["id"], cancelled["id"]}
        assert ids(sessionId=child_session["id"]) == {child["id"], running_id}
        # Sub-agents: a session created with parentRunId; its runs list under the parent.
        assert child["parentRunId"] == done["id"] and grandchild["parentRunId"] == child["id"]
        assert ids(parentRunId=done["id"]) == {child["id"], running_id}
        assert ids(parentRunId=child["id"]) == {grandchild["id"]}
        assert ids(parentRunId=str(uuid.uuid4())) == set()
        assert ids(parentRunId=done["id"], status="completed") == {child["id"]}
        assert ids(sessionId=a["id"], agentId="other") == set()
        assert ids(repoId=repos["demo"], status="completed,cancelled") == {
            done["id"],
            cancelled["id"],
            child["id"],
        }
        assert client.post(f"/api/sessions/{child_session['id']}/cancel").status_code == 202
        finished_run(client, child_session["id"], running_id)


def test_tool_call_filters(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    run_id = prompt(client, session["id"], "tools 7")
    finished_run(client, session["id"], run_id)

    def steps(**params: Any) -> list[int]:
        return [
            c["stepNumber"]
            for c in all_pages(client, f"/api/agent-runs/{run_id}/tool-calls", 2, **params)
        ]

    assert steps() == [1, 2, 3, 4, 5, 6, 7]
    assert steps(status="error") == [3, 6]
    assert steps(status="completed") == [1, 2, 4, 5, 7]
    assert steps(status="completed,error") == [1, 2, 3, 4, 5, 6, 7]
    assert steps(status="cancelled") == []
    assert steps(toolName="Tool 3") == [3]
    assert steps(toolName="Tool 3", status="completed") == []
    assert steps(toolName="Tool 4", status="completed") == [4]
    assert steps(toolName="Tool") == []  # an exact name, not a prefix


# -- 422 and 404 ------------------------------------------------------------------------


def error_of(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return dict(body["error"])


def test_bad_cursors_and_filter_values_are_422(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    finished_run(client, session["id"], prompt(client, session["id"], "tools 1"))
    run_id = prompt(client, session["id"], "tools 2")
    finished_run(client, session["id"], run_id)
    runs, calls, msgs = (
        "/api/agent-runs",
        f"/api/agent-runs/{run_id}/tool-calls",
        f"/api/agent-runs/{run_id}/messages",
    )
    _, run_cursor = page(client, runs, limit=1, sessionId=None)
    _, call_cursor = page(client, calls, limit=1)
    _, message_cursor = page(client, msgs, limit=1)
    assert run_cursor and call_cursor and message_cursor
    some_id = str(uuid.uuid4())
    bad = [
        (runs, {"cursor": "not a cursor!"}),
        (runs, {"cursor": forge("just a string")}),
        (runs, {"cursor": forge(["2020-01-01T00:00:00+00:00"])}),
        (runs, {"cursor": forge(["yesterday", some_id])}),
        (runs, {"cursor": forge(["2020-01-01T00:00:00", some_id])}),  # no zone
        (runs, {"cursor": forge(["2020-01-01T00:00:00+00:00", "not-a-uuid"])}),
        (runs, {"cursor": base64.urlsafe_b64encode(b"\xff\xfe").decode()}),
        (runs, {"cursor": call_cursor}),  # another list's cursor
        (runs, {"status": "done"}),
        (runs, {"status": "completed,bogus"}),
        (runs, {"sessionId": "nope"}),
        (runs, {"repoId": "123"}),
        (runs, {"parentRunId": "x"}),
        (runs, {"limit": "0"}),
        (runs, {"limit": "201"}),
        (runs, {"limit": "ten"}),
        (calls, {"cursor": run_cursor}),
        (calls, {"cursor": forge([1.5, some_id])}),
        (calls, {"cursor": forge([True, some_id])}),
        (calls, {"cursor": forge([2**63, some_id])}),
        (calls, {"cursor": forge([-1, some_id])}),
        (calls, {"cursor": forge([1, "not-a-uuid"])}),
        (calls, {"status": "failed"}),  # the ACP word; ours is "error"
        (calls, {"limit": "0"}),
        (msgs, {"cursor": run_cursor}),
        (msgs, {"cursor": forge([2**63])}),
        (msgs, {"cursor": forge([-5])}),
        (msgs, {"partial": "maybe"}),
        (msgs, {"limit": "100000"}),
    ]
    for url, params in bad:
        error = error_of(client.get(url, params=params), 422, "validation_error")
        assert "Traceback" not in error["message"], (url, params)


def test_unknown_ids_are_404_and_malformed_ids_422(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    run_a = prompt(client, session["id"], "tools 1")
    finished_run(client, session["id"], run_a)
    run_b = prompt(client, session["id"], "tools 1")
    finished_run(client, session["id"], run_b)
    call_of_b = tool_calls(client, run_b)[0]
    message_of_b = page(client, f"/api/agent-runs/{run_b}/messages", limit=1)[0][0]
    unknown = str(uuid.uuid4())
    for suffix in (
        "",
        "/messages",
        "/tool-calls",
        f"/messages/{unknown}",
        f"/tool-calls/{unknown}",
    ):
        error_of(client.get(f"/api/agent-runs/{unknown}{suffix}"), 404, "run_not_found")
    error_of(client.post(f"/api/agent-runs/{unknown}/resume", json={}), 404, "run_not_found")
    error_of(
        client.get(f"/api/agent-runs/{run_a}/tool-calls/{unknown}"), 404, "tool_call_not_found"
    )
    error_of(
        client.get(f"/api/agent-runs/{run_a}/tool-calls/{call_of_b['id']}"),
        404,
        "tool_call_not_found",
    )
    error_of(client.get(f"/api/agent-runs/{run_a}/messages/{unknown}"), 404, "message_not_found")
    error_of(
        client.get(f"/api/agent-runs/{run_a}/messages/{message_of_b['id']}"),
        404,
        "message_not_found",
    )
    assert (
        get_ok(client, f"/api/agent-runs/{run_b}/tool-calls/{call_of_b['id']}")["id"]
        == call_of_b["id"]
    )
    for url in (
        "/api/agent-runs/nope",
        f"/api/agent-runs/{run_a}/tool-calls/nope",
        f"/api/agent-runs/{run_a}/messages/1",
    ):
        error_of(client.get(url), 422, "validation_error")


def test_a_forged_session_cursor_without_a_zone_is_422(client: TestClient) -> None:
    cursor = forge(["2020-01-01T00:00:00", str(uuid.uuid4())])
    error_of(client.get("/api/sessions", params={"cursor": cursor}), 422, "validation_error")
