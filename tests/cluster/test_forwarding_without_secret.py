"""Issue 17, item 9: without CLUSTER_SECRET the forwarding header is refused, so nodes
forward without it and the owner knows its session by the lease: forwarding still works
(REST and WebSocket commands), and a client's own forwarding header is refused."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest
from websockets.asyncio.client import connect

from tests.conftest import PG_SERVER

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.postgres,
    pytest.mark.skipif(
        not PG_SERVER,
        reason="needs PostgreSQL: run through ./scripts/test (AGENT_SESSIONS_TEST_PG)",
    ),
]


async def test_commands_are_forwarded_without_a_cluster_secret(live_server: Any) -> None:
    a = live_server(NODE_ID="node-a", LEASE_SECONDS=5)
    b = live_server(NODE_ID="node-b", LEASE_SECONDS=5)
    async with (
        httpx.AsyncClient(base_url=a.url, timeout=30) as ha,
        httpx.AsyncClient(base_url=b.url, timeout=30) as hb,
    ):
        repo = (await ha.get("/api/repos")).json()["repos"][0]["id"]
        sid = (await ha.post("/api/sessions", json={"repoId": repo})).json()["id"]
        # A client cannot make B act on A's session itself.
        spoofed = await hb.post(
            f"/api/sessions/{sid}/prompt",
            json={"text": "hello"},
            headers={"x-agent-sessions-forwarded": "node-a"},
        )
        assert spoofed.status_code == 403, spoofed.text
        assert spoofed.json()["error"]["code"] == "forwarding_refused"
        # Through B, forwarded to A (which runs the agent): REST, then a WebSocket command.
        response = await hb.post(f"/api/sessions/{sid}/prompt", json={"text": "hello"})
        assert response.status_code == 202, response.text
        run_id = response.json()["runId"]
        with anyio.fail_after(30):
            async with connect(f"{b.ws_url}/ws/sessions/{sid}") as ws:
                ended = False
                while not ended:
                    frame = json.loads(await ws.recv())
                    ended = frame["type"] == "message" and (
                        frame["message"]["content"].get("runId") == run_id
                        and frame["message"]["content"]["type"] == "run"
                        and frame["message"]["content"]["status"] != "running"
                    )
                await ws.send(json.dumps({"type": "prompt", "text": "again", "id": "p2"}))
                while (reply := json.loads(await ws.recv()))["type"] not in ("ack", "error"):
                    pass
                assert reply["type"] == "ack" and reply["ref"] == "p2", reply
        assert (await ha.get(f"/api/sessions/{sid}")).json()["status"] == "active"
        # Only the client's spoofed request was refused; no forwarded one was.
        assert a.log().count("event=forwarding_refused") == 0
        assert b.log().count("event=forwarding_refused") == 1
