"""The echo agent bundled with chuk-acp 0.3.2 (``share/chuk-acp/examples/echo_agent.py``,
an ``ACPAgent`` from ``chuk_acp.agent``) through the real server.

It answers ``session/prompt`` with one ``agent_message_chunk`` "Echo: You said '<first
block's text>'" and ``end_turn``; its session ids are strings like ``session_1a2b3c4d``.
Its dispatcher answers every method it does not know, notifications included, with an
error *response*: ``session/cancel`` (which the server sends as its polite stop) gets
``{"jsonrpc": "2.0", "id": "", "error": {"code": -32603, ...}}``, a response to no request,
with a string id. The server must shrug it off.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.testclient import TestClient
from websockets.asyncio.client import ClientConnection, connect

from server.settings import Settings
from tests.conftest import LiveServer
from tests.helpers import (
    create_session,
    pid_gone,
    process_state,
    processes_with_env,
    prompt,
    run_ended,
    wait_for_message,
)
from tests.peers.support import agent_group, agent_texts, run_end, turn_messages

WAIT = 30


@pytest.fixture
def settings(make_settings: Callable[..., Settings], chuk_echo_command: str) -> Settings:
    return make_settings(AGENT_COMMAND=chuk_echo_command)


def test_echo_turns_then_complete(client: TestClient, demo_repo_id: str, tmp_path: Path) -> None:
    session = create_session(client, demo_repo_id)
    sid = session["id"]
    group = agent_group(client, sid)

    for text in ("hello peers", "second turn, ünïcödé"):
        run_id = prompt(client, sid, text)
        wait_for_message(client, sid, run_ended(run_id))
        turn = turn_messages(client, sid, run_id)
        assert [(m["role"], m["content"]["type"]) for m in turn] == [
            ("user", "text"),
            ("system", "run"),
            ("agent", "text"),
            ("agent", "text"),
            ("system", "run"),
        ]
        assert turn[0]["content"] == {"type": "text", "text": text}
        assert agent_texts(turn) == [f"Echo: You said '{text}'"]
        end = run_end(turn)
        assert (end["status"], end["stopReason"]) == ("completed", "end_turn")
        assert (
            client.get(f"/api/agent-runs/{run_id}").json()["summary"] == f"Echo: You said '{text}'"
        )

    # Nothing is running: cancel is accepted and sends nothing the agent would trip on.
    assert client.post(f"/api/sessions/{sid}/cancel").status_code == 202

    response = client.post(f"/api/sessions/{sid}/complete")
    assert response.status_code == 200 and response.json()["status"] == "completed"
    assert all(pid_gone(p) for p in group)
    statuses = [
        m["content"]
        for m in client.get(f"/api/sessions/{sid}/messages").json()["messages"]
        if m["content"]["type"] == "status"
    ]
    assert [(s["status"], s["reason"]) for s in statuses] == [
        ("active", "created"),
        ("completed", "user_request"),
    ]

    # The polite stop sent session/cancel, and the agent answered that notification with an
    # error response carrying id "" (its own log says so): the session still ended cleanly.
    agent_log = (tmp_path / "agent-homes" / "default" / "echo_agent.log").read_text()
    assert "Unknown method: session/cancel" in agent_log
    assert '"id": "", "error": {"code": -32603' in agent_log


async def receive(ws: ClientConnection) -> dict[str, Any]:
    with anyio.fail_after(WAIT):
        frame: dict[str, Any] = json.loads(await ws.recv())
    return frame


@pytest.mark.anyio
async def test_echo_over_the_websocket_of_a_real_server(
    live_server: Callable[..., LiveServer], chuk_echo_command: str
) -> None:
    server = live_server(AGENT_COMMAND=chuk_echo_command)
    async with httpx.AsyncClient(base_url=server.url, timeout=WAIT) as http:
        repo = (await http.get("/api/repos")).json()["repos"][0]["id"]
        response = await http.post("/api/sessions", json={"repoId": repo})
        assert response.status_code == 201, response.text
        sid = response.json()["id"]
        agents = processes_with_env(f":{server.process.pid}:")
        assert agents and all(process_state(p) not in (None, "Z") for p in agents)

        async with connect(f"{server.ws_url}/ws/sessions/{sid}") as ws:
            assert (await receive(ws))["type"] == "hello"
            while (await receive(ws))["type"] != "live":
                pass
            await ws.send(json.dumps({"type": "prompt", "text": "over the wire", "id": "p1"}))
            acks, live = [], []
            while not live or not (
                live[-1]["content"]["type"] == "run" and live[-1]["content"]["status"] != "running"
            ):
                frame = await receive(ws)
                if frame["type"] == "ack":
                    acks.append(frame)
                else:
                    assert frame["type"] == "message", frame
                    live.append(frame["message"])
        assert [(a["ref"], a.get("runId")) for a in acks] == [("p1", live[-1]["content"]["runId"])]

        assert [m["seq"] for m in live] == list(range(2, 2 + len(live)))
        assert agent_texts(live) == ["Echo: You said 'over the wire'"]
        assert (live[-1]["content"]["status"], live[-1]["content"]["stopReason"]) == (
            "completed",
            "end_turn",
        )
        stored = (await http.get(f"/api/sessions/{sid}/messages", params={"after": 1})).json()[
            "messages"
        ]
        assert stored == live

        response = await http.delete(f"/api/sessions/{sid}")
        assert response.status_code == 200 and response.json()["status"] == "cancelled"
        assert all(pid_gone(p) for p in agents)


async def wait_run(http: httpx.AsyncClient, sid: str, run_id: str) -> list[dict[str, Any]]:
    with anyio.fail_after(WAIT):
        while True:
            stored = (
                await http.get(f"/api/sessions/{sid}/messages", params={"limit": 5000})
            ).json()["messages"]
            if any(run_ended(run_id)(m) for m in stored):
                return list(stored)
            await anyio.sleep(0.05)  # polling another process's store


@pytest.mark.anyio
async def test_restart_gives_the_new_agent_the_stored_conversation(
    live_server: Callable[..., LiveServer], chuk_echo_command: str
) -> None:
    """The echo agent has no session/load: after a restart the server starts a new agent
    session and sends the stored conversation as context with the next prompt. The echo
    agent repeats only the prompt's first content block, which is that context."""
    server = live_server(AGENT_COMMAND=chuk_echo_command)
    async with httpx.AsyncClient(base_url=server.url, timeout=WAIT) as http:
        repo = (await http.get("/api/repos")).json()["repos"][0]["id"]
        sid = (await http.post("/api/sessions", json={"repoId": repo})).json()["id"]
        run_id = (
            await http.post(f"/api/sessions/{sid}/prompt", json={"text": "remember the walrus"})
        ).json()["runId"]
        before = await wait_run(http, sid, run_id)
    assert server.stop() == 0

    restarted = live_server(AGENT_COMMAND=chuk_echo_command)
    async with httpx.AsyncClient(base_url=restarted.url, timeout=WAIT) as http:
        response = await http.post(f"/api/sessions/{sid}/prompt", json={"text": "what did I say?"})
        assert response.status_code == 202, response.text
        after = await wait_run(http, sid, response.json()["runId"])
    assert after[: len(before)] == before
    new = after[len(before) :]
    assert new[0]["content"] == {"type": "text", "text": "what did I say?"}
    echoed = agent_texts(new)
    assert len(echoed) == 1
    assert (
        "remember the walrus" in echoed[0] and "Echo: You said 'remember the walrus'" in echoed[0]
    )
