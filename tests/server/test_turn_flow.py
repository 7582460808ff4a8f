"""A whole prompt turn against the demo agent, as stored messages (API.md, Messages)."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from tests.helpers import create_session, messages, prompt, run_ended, wait_for_message


def kinds(stored: list[dict[str, Any]]) -> list[str]:
    """A compact picture of the log: type, plus partial/status where it matters."""
    out = []
    for m in stored:
        c = m["content"]
        if c["type"] in ("text", "thought"):
            out.append(f"{m['role']}:{c['type']}{'~' if c.get('partial') else ''}")
        elif c["type"] in ("tool", "run", "status"):
            out.append(f"{c['type']}:{c['status']}")
        else:
            out.append(c["type"])
    return out


def collapse(items: list[str]) -> list[str]:
    """Runs of the same item become one."""
    return [item for i, item in enumerate(items) if i == 0 or items[i - 1] != item]


def test_a_whole_turn_in_order(client: TestClient, demo_repo_id: str, workspace_root: Any) -> None:
    session = create_session(client, demo_repo_id)
    run_id = prompt(client, session["id"], "hello")
    wait_for_message(client, session["id"], run_ended(run_id))
    stored = messages(client, session["id"], raw="true")

    # seq is 1..N without a gap, and every turn message carries the run id.
    assert [m["seq"] for m in stored] == list(range(1, len(stored) + 1))
    turn = [m for m in stored if m["runId"] == run_id]
    assert turn == stored[1:]  # everything after the session's own status message

    assert collapse(kinds(turn)) == [
        "user:text",
        "run:running",
        "agent:thought~",
        "agent:thought",
        "plan",
        "tool:pending",
        "tool:in_progress",
        "tool:completed",
        "plan",
        "agent:text~",
        "agent:text",
        "usage",
        "run:completed",
    ]
    assert turn[0]["content"] == {"type": "text", "text": "hello"} and turn[0]["role"] == "user"

    # Thought: partials, then one whole thought with their concatenation.
    thoughts = [m["content"] for m in turn if m["content"]["type"] == "thought"]
    assert [t["partial"] for t in thoughts] == [True] * (len(thoughts) - 1) + [False]
    assert len(thoughts) >= 3
    assert thoughts[-1]["text"] == "".join(t["text"] for t in thoughts[:-1])

    # Plan: always the whole plan.
    plans = [m["content"] for m in turn if m["content"]["type"] == "plan"]
    assert [s["status"] for s in plans[0]["steps"]] == ["pending"] * len(plans[0]["steps"])
    assert [s["status"] for s in plans[-1]["steps"]] == ["completed"] * len(plans[-1]["steps"])
    assert all(set(s) == {"content", "priority", "status"} for p in plans for s in p["steps"])

    # Tool: pending -> in_progress -> completed, each with the merged state so far.
    tools = [m["content"] for m in turn if m["content"]["type"] == "tool"]
    readme = str(workspace_root / "demo" / "README.md")
    assert [t["status"] for t in tools] == ["pending", "in_progress", "completed"]
    for t in tools:
        assert t["toolCallId"] == "call_1"
        assert t["tool"] == "Read README.md" and t["kind"] == "read"
        assert t["args"] == {"path": readme}  # rawInput came only with the first update
        assert t["locations"] == [{"path": readme}]
    assert tools[0]["result"] is None and tools[1]["result"] is None
    assert tools[2]["result"] == {
        "bytes": len((workspace_root / "demo" / "README.md").read_bytes()),
        "lines": 3,
    }
    assert tools[2]["content"][0]["content"]["text"].startswith("# Demo")
    assert [m["stepNumber"] for m in turn if m["content"]["type"] == "tool"] == [1, 1, 1]

    # Text: partials, then exactly one whole text equal to their concatenation.
    texts = [m["content"] for m in turn if m["role"] == "agent" and m["content"]["type"] == "text"]
    whole = [t for t in texts if t["partial"] is False]
    assert len(whole) == 1 and texts[-1] is whole[0]
    assert len(texts) >= 4
    assert whole[0]["text"] == "".join(t["text"] for t in texts[:-1])
    assert whole[0]["text"].startswith("You said: hello")

    usage = next(m["content"] for m in turn if m["content"]["type"] == "usage")
    assert usage["size"] == 200000 and usage["used"] > 0
    assert usage["cost"]["currency"] == "USD" and usage["cost"]["amount"] > 0

    start, end = turn[1]["content"], turn[-1]["content"]
    assert start == {
        "type": "run",
        "runId": run_id,
        "status": "running",
        "stopReason": None,
        "durationMs": None,
    }
    assert (end["runId"], end["status"], end["stopReason"]) == (run_id, "completed", "end_turn")
    assert isinstance(end["durationMs"], int) and end["durationMs"] >= 0

    # raw: the ACP frame for what came from one agent frame; the user message keeps the
    # session/prompt frame it became; null for what the server composed.
    for m in stored:
        c = m["content"]
        if m["role"] == "user":
            assert m["raw"]["method"] == "session/prompt", m
            assert m["raw"]["params"]["prompt"] == [{"type": "text", "text": c["text"]}], m
            continue
        composed = c["type"] in ("run", "status") or (
            c["type"] in ("text", "thought") and c["partial"] is False
        )
        if composed:
            assert m["raw"] is None, m
        else:
            raw = m["raw"]
            assert raw["jsonrpc"] == "2.0" and raw["method"] == "session/update", m
            update = raw["params"]["update"]
            expected = {
                "thought": "agent_thought_chunk",
                "text": "agent_message_chunk",
                "plan": "plan",
                "usage": "usage_update",
            }.get(c["type"])
            if c["type"] == "tool":
                assert update["sessionUpdate"] in ("tool_call", "tool_call_update")
                assert update["toolCallId"] == c["toolCallId"]
            else:
                assert update["sessionUpdate"] == expected
            if c["type"] in ("text", "thought"):
                assert update["content"]["text"] == c["text"]
    # Without ?raw=true there is no raw field.
    assert all("raw" not in m for m in messages(client, session["id"]))


def test_turn_with_tools_counts_steps_and_failures(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    run_id = prompt(client, session["id"], "tools 4")
    assert (
        wait_for_message(client, session["id"], run_ended(run_id))["content"]["status"]
        == "completed"
    )
    tools = [m for m in messages(client, session["id"], type="tool")]
    final: dict[str, dict[str, Any]] = {}
    for m in tools:
        final[m["content"]["toolCallId"]] = m
    assert list(final) == ["call_1", "call_2", "call_3", "call_4"]
    assert [final[k]["content"]["status"] for k in final] == [
        "completed",
        "completed",
        "error",
        "completed",
    ]
    assert final["call_3"]["content"]["result"] == {"error": "tool 3 failed"}
    assert final["call_1"]["content"]["args"] == {"k": 1}
    assert [final[k]["stepNumber"] for k in final] == [1, 2, 3, 4]


def test_two_turns_continue_the_sequence(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    first = prompt(client, session["id"], "one")
    wait_for_message(client, session["id"], run_ended(first))
    count = len(messages(client, session["id"]))
    second = prompt(client, session["id"], "two")
    wait_for_message(client, session["id"], run_ended(second))
    stored = messages(client, session["id"])
    assert [m["seq"] for m in stored] == list(range(1, len(stored) + 1))
    assert {m["runId"] for m in stored[count:]} == {second}
    assert stored[count]["content"] == {"type": "text", "text": "two"}
    whole = [
        m["content"]["text"]
        for m in stored
        if m["role"] == "agent" and m["content"]["type"] == "text" and not m["content"]["partial"]
    ]
    assert len(whole) == 2 and "You said: two" in whole[1]
    assert client.get(f"/api/sessions/{session['id']}").json()["lastSeq"] == stored[-1]["seq"]
