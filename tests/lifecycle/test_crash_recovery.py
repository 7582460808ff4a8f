"""Crash recovery after kill -9 of the server, and graceful shutdown on SIGTERM, with
real server processes (issue: lifecycle, points 6-7)."""

from __future__ import annotations

import json
import os
import signal
import time
from typing import Any

import anyio
import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.helpers import process_state, processes_with_env

pytestmark = pytest.mark.anyio


def alive(pid: int) -> bool:
    return process_state(pid) not in (None, "Z")


async def wait_run_end(
    http: httpx.AsyncClient, session_id: str, run_id: str, timeout: float = 30
) -> dict[str, Any]:
    with anyio.fail_after(timeout):
        while True:
            run = (await http.get(f"/api/agent-runs/{run_id}")).json()
            if run["status"] != "running":
                return run
            await anyio.sleep(0.05)


async def session_messages(http: httpx.AsyncClient, session_id: str) -> list[dict[str, Any]]:
    return (await http.get(f"/api/sessions/{session_id}/messages", params={"limit": 5000})).json()[
        "messages"
    ]


async def test_kill_9_then_restart_loses_nothing_and_leaves_no_agent(live_server) -> None:
    server = live_server()
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        repo = (await http.get("/api/repos")).json()["repos"][0]["id"]
        sid = (await http.post("/api/sessions", json={"repoId": repo})).json()["id"]
        first = (
            await http.post(f"/api/sessions/{sid}/prompt", json={"text": "grandchildren"})
        ).json()["runId"]
        await wait_run_end(http, sid, first)
        text = next(
            m["content"]["text"]
            for m in await session_messages(http, sid)
            if m["content"]["type"] == "text"
            and not m["content"].get("partial")
            and "grandchildren:" in m["content"]["text"]
        )
        grandchildren = [int(p) for p in text.split("grandchildren:")[1].split()[:2]]
        agents = processes_with_env(f":{server.process.pid}:")
        assert agents and all(alive(p) for p in grandchildren)

        seen: list[dict[str, Any]] = []
        async with connect(f"{server.ws_url}/ws/sessions/{sid}") as ws:
            assert json.loads(await ws.recv())["type"] == "hello"
            run = (
                await http.post(f"/api/sessions/{sid}/prompt", json={"text": "slow 200"})
            ).json()["runId"]
            with anyio.fail_after(20):
                while sum(1 for m in seen if m["content"]["type"] == "text") < 5:
                    frame = json.loads(await ws.recv())
                    if frame["type"] == "message":
                        seen.append(frame["message"])
            os.kill(server.process.pid, signal.SIGKILL)
            server.process.wait(10)
            with pytest.raises(ConnectionClosed):
                with anyio.fail_after(10):
                    while True:
                        frame = json.loads(await ws.recv())
                        if frame["type"] == "message":
                            seen.append(frame["message"])

    restarted = live_server()
    for pid in [*agents, *grandchildren]:
        assert not alive(pid), f"process {pid} of the killed server survived"
    async with httpx.AsyncClient(base_url=restarted.url, timeout=30) as http:
        stored = await session_messages(http, sid)
        by_seq = {m["seq"]: m for m in stored}
        assert [m["seq"] for m in stored] == list(range(1, len(stored) + 1)), "no gap, no duplicate"
        for message in seen:  # every message a client saw is there, unchanged
            assert by_seq[message["seq"]]["content"] == message["content"]
            assert by_seq[message["seq"]]["id"] == message["id"]
        assert (await http.get(f"/api/agent-runs/{run}")).json()["status"] == "interrupted"
        tail = [m["content"] for m in stored[-3:]]
        assert {
            "type": "status",
            "status": "active",
            "reason": "server_restarted",
            "detail": {"runId": run},
        } in tail
        session = (await http.get(f"/api/sessions/{sid}")).json()
        assert session["status"] == "active" and session["activeRunId"] is None
        # The next prompt restarts the agent and hands it the conversation.
        again = (await http.post(f"/api/sessions/{sid}/prompt", json={"text": "history"})).json()[
            "runId"
        ]
        assert (await wait_run_end(http, sid, again))["status"] == "completed"
        reply = [
            m["content"]["text"]
            for m in await session_messages(http, sid)
            if m["runId"] == again
            and m["content"]["type"] == "text"
            and not m["content"].get("partial")
        ]
        # The fresh agent received the stored conversation ahead of the new request.
        assert reply and "grandchildren" in reply[-1] and "slow 200" in reply[-1]
        user = [
            m
            for m in await session_messages(http, sid)
            if m["runId"] == again and m["role"] == "user"
        ]
        assert user[0]["content"]["text"] == "history"


async def test_permission_pending_at_crash_is_cancelled(live_server, workspace_root) -> None:
    server = live_server()
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        repo = (await http.get("/api/repos")).json()["repos"][0]["id"]
        sid = (await http.post("/api/sessions", json={"repoId": repo})).json()["id"]
        await http.post(f"/api/sessions/{sid}/prompt", json={"text": "write notes.txt hi"})
        with anyio.fail_after(20):
            while not any(  # noqa: ASYNC110 - a killed server's state is seen only through its API
                m["content"]["type"] == "permission" for m in await session_messages(http, sid)
            ):
                await anyio.sleep(0.05)
    server.kill()
    restarted = live_server()
    async with httpx.AsyncClient(base_url=restarted.url, timeout=30) as http:
        permissions = [
            m["content"]
            for m in await session_messages(http, sid)
            if m["content"]["type"] == "permission"
        ]
        assert permissions[-1]["outcome"] == {"outcome": "cancelled"}
        request_id = permissions[-1]["requestId"]
        late = await http.post(
            f"/api/sessions/{sid}/permissions/{request_id}", json={"optionId": "allow"}
        )
        assert late.status_code == 409
    assert not (workspace_root / "demo" / "notes.txt").exists()


async def test_elicitation_pending_at_crash_is_cancelled(live_server, workspace_root) -> None:
    server = live_server()
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        repo = (await http.get("/api/repos")).json()["repos"][0]["id"]
        sid = (await http.post("/api/sessions", json={"repoId": repo})).json()["id"]
        await http.post(f"/api/sessions/{sid}/prompt", json={"text": "save notes.txt hi"})
        with anyio.fail_after(20):
            while not any(  # noqa: ASYNC110 - a killed server's state is seen only through its API
                m["content"]["type"] == "elicitation" for m in await session_messages(http, sid)
            ):
                await anyio.sleep(0.05)
    server.kill()
    restarted = live_server()
    async with httpx.AsyncClient(base_url=restarted.url, timeout=30) as http:
        asked = [
            m["content"]
            for m in await session_messages(http, sid)
            if m["content"]["type"] == "elicitation"
        ]
        assert [a["outcome"] for a in asked] == [None, {"action": "cancel"}]
        assert asked[-1]["reason"] == "server_restarted"
        late = await http.post(
            f"/api/sessions/{sid}/elicitations/{asked[-1]['requestId']}", json={"action": "cancel"}
        )
        assert late.status_code == 409
        assert late.json()["error"]["code"] == "elicitation_already_answered"
    assert not (workspace_root / "demo" / "notes.txt").exists()


async def test_sigterm_interrupts_runs_closes_viewers_1001_and_stops_agents(live_server) -> None:
    server = live_server()
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        repo = (await http.get("/api/repos")).json()["repos"][0]["id"]
        sid = (await http.post("/api/sessions", json={"repoId": repo})).json()["id"]
        agents = processes_with_env(f":{server.process.pid}:")
        async with connect(f"{server.ws_url}/ws/sessions/{sid}") as ws:
            run = (
                await http.post(f"/api/sessions/{sid}/prompt", json={"text": "slow 200"})
            ).json()["runId"]
            with anyio.fail_after(20):
                while (
                    json.loads(await ws.recv()).get("message", {}).get("content", {}).get("type")
                    != "text"
                ):
                    pass
            started = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            with pytest.raises(ConnectionClosed) as closed:
                with anyio.fail_after(20):
                    while True:
                        await ws.recv()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
        # uvicorn re-raises the signal once its graceful shutdown is done.
        assert server.process.wait(30) in (0, -signal.SIGTERM)
        assert "Application shutdown complete" in server.log()
        assert time.monotonic() - started < 15
    assert agents and not any(alive(p) for p in agents)
    restarted = live_server()
    async with httpx.AsyncClient(base_url=restarted.url, timeout=30) as http:
        assert (await http.get(f"/api/agent-runs/{run}")).json()["status"] == "interrupted"
        assert (await http.get(f"/api/sessions/{sid}")).json()["status"] == "active"


async def test_restart_restores_with_session_load_without_storing_the_replay(
    live_server, tmp_path
) -> None:
    from tests.helpers import demo_command

    state = tmp_path / "demo-state"
    state.mkdir()
    command = demo_command(DEMO_AGENT_LOAD="1", DEMO_AGENT_STATE_DIR=str(state))
    server = live_server(AGENT_COMMAND=command)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        repo = (await http.get("/api/repos")).json()["repos"][0]["id"]
        sid = (await http.post("/api/sessions", json={"repoId": repo})).json()["id"]
        run = (await http.post(f"/api/sessions/{sid}/prompt", json={"text": "remember me"})).json()[
            "runId"
        ]
        await wait_run_end(http, sid, run)
        before = await session_messages(http, sid)
    server.stop()
    restarted = live_server(AGENT_COMMAND=command)
    async with httpx.AsyncClient(base_url=restarted.url, timeout=30) as http:
        again = (await http.post(f"/api/sessions/{sid}/prompt", json={"text": "history"})).json()[
            "runId"
        ]
        await wait_run_end(http, sid, again)
        after = await session_messages(http, sid)
    new = after[len(before) :]
    assert after[: len(before)] == before
    # The first new message is the new prompt: nothing replayed by session/load was stored.
    assert new[0]["role"] == "user" and new[0]["content"]["text"] == "history"
    reply = [
        m["content"]["text"]
        for m in new
        if m["content"]["type"] == "text" and m["content"].get("partial") is False
    ]
    assert reply and "History: remember me" in reply[-1]
    assert "[Context]" not in new[0]["content"]["text"]
