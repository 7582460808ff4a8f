"""Terminals through the real server: the client advertises ``terminal: true``, the demo
agent's ``terminal`` command shows a terminal in a tool call with its output, and every
process a terminal started is gone once the session stops or its agent exits."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.helpers import (
    create_session,
    is_type,
    messages,
    process_state,
    prompt,
    run_ended,
    wait_for_message,
)
from tests.security.support import when

EURO = "€"


@pytest.fixture
def session_id(client: TestClient, demo_repo_id: str) -> Iterator[str]:
    session = create_session(client, demo_repo_id)
    yield session["id"]
    client.delete(f"/api/sessions/{session['id']}")


def final_tool(client: TestClient, session_id: str, run_id: str) -> dict[str, Any]:
    wait_for_message(client, session_id, run_ended(run_id))
    tools = [
        m["content"]
        for m in messages(client, session_id)
        if m["content"]["type"] == "tool" and m["runId"] == run_id
    ]
    return tools[-1]


@pytest.mark.parametrize(
    ("text", "status", "output", "truncated", "exit_status"),
    [
        ("terminal echo hello", "completed", "hello\n", False, {"exitCode": 0, "signal": None}),
        (
            "terminal sh -c 'echo out; echo err >&2; exit 4'",
            "error",
            "out\nerr\n",
            False,
            {"exitCode": 4, "signal": None},
        ),
        (
            "terminal sh -c 'kill -KILL $$'",
            "error",
            "",
            False,
            {"exitCode": None, "signal": "SIGKILL"},
        ),
        (
            f"terminal limit=7 printf {EURO * 10}",
            "completed",
            EURO * 2,
            True,
            {"exitCode": 0, "signal": None},
        ),
        (
            "terminal limit=5 sh -c 'seq 1 1000'",
            "completed",
            "1000\n",
            True,
            {"exitCode": 0, "signal": None},
        ),
        ("terminal pwd", "completed", None, False, {"exitCode": 0, "signal": None}),
    ],
)
def test_terminal_in_a_tool_call(
    client: TestClient,
    session_id: str,
    workspace_root: Any,
    text: str,
    status: str,
    output: str | None,
    truncated: bool,
    exit_status: dict[str, Any],
) -> None:
    tool = final_tool(client, session_id, prompt(client, session_id, text))
    assert tool["kind"] == "execute" and tool["status"] == status, tool
    [shown] = tool["content"]
    assert shown["type"] == "terminal" and shown["terminalId"], tool
    expected = output if output is not None else f"{(workspace_root / 'demo').resolve()}\n"
    assert tool["result"] == {"output": expected, "truncated": truncated, "exitStatus": exit_status}


def start_group(client: TestClient, session_id: str) -> list[int]:
    """A terminal left running: a shell and its background child; returns both pids."""
    run_id = prompt(client, session_id, "terminal-start sh -c 'sleep 1000 & echo pids $$ $!; wait'")
    wait_for_message(client, session_id, run_ended(run_id))
    reply = wait_for_message(
        client,
        session_id,
        lambda m: (
            m["runId"] == run_id
            and m["role"] == "agent"
            and m["content"]["type"] == "text"
            and not m["content"]["partial"]
        ),
    )
    match = re.search(r"pids (\d+) (\d+)", reply["content"]["text"])
    assert match, reply
    pids = [int(match[1]), int(match[2])]
    assert all(process_state(p) not in (None, "Z") for p in pids)
    return pids


def gone(pids: list[int]) -> bool:
    return all(process_state(p) is None for p in pids)


@pytest.mark.parametrize("how", ["delete", "complete", "agent_crash"])
def test_terminal_processes_die_with_the_session(
    client: TestClient, demo_repo_id: str, how: str
) -> None:
    session = create_session(client, demo_repo_id)
    sid = session["id"]
    pids = start_group(client, sid) + start_group(client, sid)
    if how == "delete":
        assert client.delete(f"/api/sessions/{sid}").status_code == 200
    elif how == "complete":
        assert client.post(f"/api/sessions/{sid}/complete").status_code == 200
    else:
        prompt(client, sid, "crash")
        wait_for_message(client, sid, is_type("status", status="error"))
    when(lambda: gone(pids), what=f"terminal processes {pids} to be gone (not even zombies)")
