"""Checks shared by the peer tests: the shape of a stored turn, permissions answered by
``kind``, and the agent's whole process group."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from tests.helpers import live_agent_pid, messages, wait_for_message


def turn_messages(client: TestClient, session_id: str, run_id: str) -> list[dict[str, Any]]:
    stored = messages(client, session_id)
    assert [m["seq"] for m in stored] == list(range(1, len(stored) + 1)), "seq has a gap"
    return [m for m in stored if m["runId"] == run_id]


def agent_texts(turn: list[dict[str, Any]]) -> list[str]:
    """The agent's whole texts, checking the rule of API.md on the way: one or more
    partial chunks, then exactly one whole text that is their concatenation."""
    wholes: list[str] = []
    parts: list[str] = []
    for message in turn:
        content = message["content"]
        if content["type"] != "text" or message["role"] != "agent":
            continue
        if content["partial"]:
            parts.append(content["text"])
        else:
            assert parts, f"a whole text with no partial before it: {content}"
            assert content["text"] == "".join(parts)
            wholes.append(content["text"])
            parts = []
    assert not parts, f"partial text never closed by a whole one: {parts}"
    return wholes


def tool_messages(turn: list[dict[str, Any]], call_id: str) -> list[dict[str, Any]]:
    return [
        m["content"]
        for m in turn
        if m["content"]["type"] == "tool" and m["content"]["toolCallId"] == call_id
    ]


def run_end(turn: list[dict[str, Any]]) -> dict[str, Any]:
    ends = [
        m["content"]
        for m in turn
        if m["content"]["type"] == "run" and m["content"]["status"] != "running"
    ]
    assert len(ends) == 1, ends
    return ends[0]


def answer_permission(
    client: TestClient, session_id: str, run_id: str, kind: str
) -> dict[str, Any]:
    """Wait for the run's pending permission request and answer it with the option of
    ``kind`` (option ids are the agent's own: never chosen by id). Returns the request."""
    asked = wait_for_message(
        client,
        session_id,
        lambda m: (
            m["runId"] == run_id
            and m["content"]["type"] == "permission"
            and m["content"]["outcome"] is None
        ),
    )["content"]
    option = next(o for o in asked["options"] if o["kind"] == kind)
    response = client.post(
        f"/api/sessions/{session_id}/permissions/{asked['requestId']}",
        json={"optionId": option["optionId"]},
    )
    assert response.status_code == 200, response.text
    assert response.json()["outcome"] == {"outcome": "selected", "optionId": option["optionId"]}
    return dict(asked)


def process_group(pgid: int) -> list[int]:
    """Pids (zombies included) whose process group is ``pgid``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid:
                pids.append(int(entry.name))
    return pids


def agent_group(client: TestClient, session_id: str) -> list[int]:
    """The live agent's pid and every process in its group (it leads its own group)."""
    pid = live_agent_pid(client, session_id)
    group = process_group(pid)
    assert pid in group, f"the agent {pid} does not lead its own process group"
    return group
