"""Two real server processes sharing one real PostgreSQL (issue: scale-out).

Runs when the suite runs against PostgreSQL (``AGENT_SESSIONS_TEST_PG``, set by
./scripts/test after starting a throwaway server with ./scripts/pg)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from websockets.asyncio.client import connect

from tests.conftest import PG_SERVER
from tests.helpers import process_state, processes_with_env

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.postgres,
    pytest.mark.skipif(
        not PG_SERVER,
        reason="needs PostgreSQL: run through ./scripts/test (AGENT_SESSIONS_TEST_PG)",
    ),
]

LEASE = 2.0


@pytest.fixture
def two_nodes(live_server: Any) -> Any:
    """Start a node by name; every node of a test shares the test's database."""

    def start(name: str, **env: Any) -> Any:
        return live_server(
            NODE_ID=name,
            LEASE_SECONDS=LEASE,
            CLUSTER_SECRET="s3cret",
            MAX_CONCURRENT_SESSIONS=4,
            **env,
        )

    return start


async def _collect(url: str, until: Any, out: list[dict[str, Any]], timeout: float = 30) -> None:
    async with connect(url) as ws:
        with anyio.fail_after(timeout):
            while True:
                frame = json.loads(await ws.recv())
                if frame["type"] == "message":
                    out.append(frame["message"])
                    if until(frame["message"]):
                        return


def _run_end(run_id: str):
    return lambda m: (
        m["content"]["type"] == "run"
        and m["content"]["runId"] == run_id
        and m["content"]["status"] != "running"
    )


async def _messages(http: httpx.AsyncClient, sid: str) -> list[dict[str, Any]]:
    return (await http.get(f"/api/sessions/{sid}/messages", params={"limit": 5000})).json()[
        "messages"
    ]


async def test_create_on_a_watch_and_command_through_b(two_nodes) -> None:
    a, b = two_nodes("node-a"), two_nodes("node-b")
    async with (
        httpx.AsyncClient(base_url=a.url, timeout=30) as ha,
        httpx.AsyncClient(base_url=b.url, timeout=30) as hb,
    ):
        repo = (await ha.get("/api/repos")).json()["repos"][0]["id"]
        sid = (await ha.post("/api/sessions", json={"repoId": repo})).json()["id"]
        assert (await hb.get(f"/api/sessions/{sid}")).json()["status"] == "active"
        on_a: list[dict[str, Any]] = []
        on_b: list[dict[str, Any]] = []
        # Prompt through B (forwarded to A, which runs the agent); watch on both.
        async with anyio.create_task_group() as tg:
            run_box: dict[str, str] = {}

            async def prompt_when_watching() -> None:
                response = await hb.post(
                    f"/api/sessions/{sid}/prompt", json={"text": "write notes.txt from-b"}
                )
                assert response.status_code == 202, response.text
                run_box["id"] = response.json()["runId"]

            def permission_pending(m: dict[str, Any]) -> bool:
                return m["content"]["type"] == "permission" and m["content"]["outcome"] is None

            tg.start_soon(_collect, f"{b.ws_url}/ws/sessions/{sid}", permission_pending, on_b)
            tg.start_soon(_collect, f"{a.ws_url}/ws/sessions/{sid}", permission_pending, on_a)
            await prompt_when_watching()
        request = next(m["content"] for m in on_b if m["content"]["type"] == "permission")
        answer = await hb.post(
            f"/api/sessions/{sid}/permissions/{request['requestId']}", json={"optionId": "allow"}
        )
        assert answer.status_code == 200, answer.text
        late = await hb.post(
            f"/api/sessions/{sid}/permissions/{request['requestId']}", json={"optionId": "reject"}
        )
        assert (
            late.status_code == 409 and late.json()["error"]["code"] == "permission_already_decided"
        )
        run_id = run_box["id"]
        full_a: list[dict[str, Any]] = []
        full_b: list[dict[str, Any]] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(_collect, f"{a.ws_url}/ws/sessions/{sid}", _run_end(run_id), full_a)
            tg.start_soon(_collect, f"{b.ws_url}/ws/sessions/{sid}", _run_end(run_id), full_b)
        assert [m["seq"] for m in full_b] == list(range(1, len(full_b) + 1))
        assert full_a == full_b, "both nodes stream the same sequence"
        assert (Path(a.env["AGENT_WORKSPACE_ROOT"]) / "demo" / "notes.txt").read_text() == "from-b"
        # Same status codes as on one node, through either node.
        busy = await hb.post(f"/api/sessions/{sid}/prompt", json={"text": ""})
        assert busy.status_code == 422
        assert (await hb.post(f"/api/sessions/{sid}/complete")).status_code == 200
        again = await ha.post(f"/api/sessions/{sid}/prompt", json={"text": "x"})
        assert again.status_code == 409 and again.json()["error"]["code"] == "session_not_active"


async def test_global_limit_holds_across_nodes(two_nodes) -> None:
    # the admitted agents start while each node answers ~500 racing requests: the
    # default start timeout, not the suite's 20 s (a start took longer under CI load once)
    a = two_nodes("node-a", AGENT_START_TIMEOUT=60)
    b = two_nodes("node-b", AGENT_START_TIMEOUT=60)
    statuses: list[int] = []
    limits = httpx.Limits(max_connections=48, max_keepalive_connections=0)  # no idle-close races
    async with (
        httpx.AsyncClient(base_url=a.url, timeout=60, limits=limits) as ha,
        httpx.AsyncClient(base_url=b.url, timeout=60, limits=limits) as hb,
    ):
        repo = (await ha.get("/api/repos")).json()["repos"][0]["id"]

        async def create(http: httpx.AsyncClient) -> None:
            statuses.append((await http.post("/api/sessions", json={"repoId": repo})).status_code)

        async with anyio.create_task_group() as tg:
            for i in range(1000):
                tg.start_soon(create, ha if i % 2 else hb)
        assert statuses.count(201) == 4
        assert set(statuses) == {201, 429}
        assert (await hb.get("/api/sessions", params={"status": "active"})).json()["total"] == 4


async def test_node_killed_mid_turn_then_resumed_through_the_other(two_nodes) -> None:
    a, b = two_nodes("node-a"), two_nodes("node-b")
    async with httpx.AsyncClient(base_url=b.url, timeout=30) as hb:
        repo = (await hb.get("/api/repos")).json()["repos"][0]["id"]
        async with httpx.AsyncClient(base_url=a.url, timeout=30) as ha:
            sid = (await ha.post("/api/sessions", json={"repoId": repo})).json()["id"]
            agents = processes_with_env(f":{a.process.pid}:")
            run = (await ha.post(f"/api/sessions/{sid}/prompt", json={"text": "slow 200"})).json()[
                "runId"
            ]
        seen: list[dict[str, Any]] = []
        await _collect(
            f"{b.ws_url}/ws/sessions/{sid}",
            lambda m: sum(1 for x in seen if x["content"]["type"] == "text") >= 4,
            seen,
        )
        os.kill(a.process.pid, signal.SIGKILL)
        a.process.wait(10)
        for pid in agents:  # the agents die with their node
            with anyio.fail_after(10):
                while process_state(pid) not in (None, "Z"):  # noqa: ASYNC110 - /proc has no event
                    await anyio.sleep(0.05)
        with anyio.fail_after(LEASE * 10):  # B takes over once A's lease expires
            # B's takeover is seen only through its API: poll it
            while (await hb.get(f"/api/agent-runs/{run}")).json()["status"] == "running":  # noqa: ASYNC110
                await anyio.sleep(0.1)
        assert (await hb.get(f"/api/agent-runs/{run}")).json()["status"] == "interrupted"
        stored = {m["seq"]: m for m in await _messages(hb, sid)}
        for message in seen:
            assert stored[message["seq"]]["content"] == message["content"]
        resumed = await hb.post(f"/api/agent-runs/{run}/resume", json={"text": "carry on"})
        assert resumed.status_code == 202, resumed.text
        new_run = resumed.json()["id"]
        done: list[dict[str, Any]] = []
        await _collect(f"{b.ws_url}/ws/sessions/{sid}?after={max(stored)}", _run_end(new_run), done)
        assert done[-1]["content"]["status"] == "completed"
        seqs = [m["seq"] for m in await _messages(hb, sid)]
        assert seqs == list(range(1, len(seqs) + 1))


PNG_1PX = (  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5E"
    "rkJggg=="
)


async def _run_over(http: httpx.AsyncClient, run_id: str) -> None:
    with anyio.fail_after(30):
        while (await http.get(f"/api/agent-runs/{run_id}")).json()["status"] == "running":  # noqa: ASYNC110 - seen through the API
            await anyio.sleep(0.05)


async def _elicitations(http: httpx.AsyncClient, sid: str) -> list[dict[str, Any]]:
    with anyio.fail_after(30):
        while True:
            found = [
                m["content"]
                for m in await _messages(http, sid)
                if m["content"]["type"] == "elicitation"
            ]
            if found:
                return found
            await anyio.sleep(0.05)


async def test_websocket_commands_through_b_reach_the_agent_on_a(two_nodes) -> None:
    """set_mode, set_config, a prompt with content blocks and an elicitation answer sent
    over B's WebSocket for a session A runs: each is its REST twin on A."""
    a, b = two_nodes("node-a"), two_nodes("node-b")
    async with httpx.AsyncClient(base_url=a.url, timeout=30) as ha:
        repo = (await ha.get("/api/repos")).json()["repos"][0]["id"]
        sid = (await ha.post("/api/sessions", json={"repoId": repo})).json()["id"]
        async with connect(f"{b.ws_url}/ws/sessions/{sid}") as ws:

            async def command(**frame: Any) -> dict[str, Any]:
                await ws.send(json.dumps(frame))
                with anyio.fail_after(30):
                    while True:
                        reply = json.loads(await ws.recv())
                        if reply["type"] in ("ack", "error") and reply["ref"] == frame["id"]:
                            return dict(reply)

            assert (await command(type="set_mode", modeId="ask", id="m"))["type"] == "ack"
            set_config = await command(
                type="set_config", configId="model", value="demo-large", id="c"
            )
            assert set_config["type"] == "ack"
            refused = await command(type="set_mode", modeId="yolo", id="bad")
            assert refused["error"]["code"] == "validation_error"
            controls = (await ha.get(f"/api/sessions/{sid}/controls")).json()
            assert controls["modes"]["currentModeId"] == "ask"
            image = {"type": "image", "mimeType": "image/png", "data": PNG_1PX}
            first = await command(type="prompt", text="look", content=[image], id="p")
            assert first["type"] == "ack" and first["runId"], first
            await _run_over(ha, first["runId"])
            said = [m for m in await _messages(ha, sid) if m["role"] == "user"]
            assert said[-1]["content"]["attachments"][0]["type"] == "image"
            second = await command(type="prompt", text="save via-b.txt hi", id="s")
            (asked,) = await _elicitations(ha, sid)
            answer = {
                "type": "elicitation",
                "requestId": asked["requestId"],
                "action": "accept",
                "content": {"path": "via-b.txt"},
            }
            assert (await command(**answer, id="e"))["type"] == "ack"
            again = await command(**answer, id="e2")
            assert again["error"]["code"] == "elicitation_already_answered"
        await _run_over(ha, second["runId"])
        assert (Path(a.env["AGENT_WORKSPACE_ROOT"]) / "demo" / "via-b.txt").read_text() == "hi"
        await ha.delete(f"/api/sessions/{sid}")
