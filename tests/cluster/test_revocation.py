"""Revocation on every node (API.md "Users and access"): two real server processes on
one PostgreSQL; a member's WebSocket open on node B is closed with 4401 within a second
of an admin revoking the member's token on node A, and the token is refused on both at
once. A command sent on node B's stream for a session node A runs is forwarded with the
member's own credential: the stored prompt names the member."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.cluster.test_two_nodes import LEASE
from tests.conftest import PG_SERVER

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.postgres,
    pytest.mark.skipif(
        not PG_SERVER,
        reason="needs PostgreSQL: run through ./scripts/test (AGENT_SESSIONS_TEST_PG)",
    ),
]

ADMIN = "cluster-admin-token-0123456789"


async def test_a_token_revoked_on_one_node_closes_its_websocket_on_the_other(
    live_server: Any,
) -> None:
    env = {"LEASE_SECONDS": LEASE, "CLUSTER_SECRET": "s3cret", "API_TOKEN": ADMIN}
    a = live_server(NODE_ID="node-a", **env)
    b = live_server(NODE_ID="node-b", **env)
    admin = {"Authorization": f"Bearer {ADMIN}"}
    async with (
        httpx.AsyncClient(base_url=a.url, timeout=30, headers=admin) as ha,
        httpx.AsyncClient(base_url=b.url, timeout=30) as hb,
    ):
        made = (await ha.post("/api/users", json={"name": "mo", "role": "member"})).json()
        member = made["token"]
        as_member = {"Authorization": f"Bearer {member}"}
        repo = (await ha.get("/api/repos")).json()["repos"][0]["id"]
        created = await ha.post("/api/sessions", json={"repoId": repo}, headers=as_member)
        assert created.status_code == 201, created.text
        sid = created.json()["id"]
        assert created.json()["owner"]["name"] == "mo"
        url = f"{b.ws_url}/ws/sessions/{sid}?token={member}"
        async with connect(url) as ws:
            with anyio.fail_after(30):
                while json.loads(await ws.recv())["type"] != "live":
                    pass
                await ws.send(json.dumps({"type": "prompt", "text": "hello", "id": "p1"}))
                while True:
                    frame = json.loads(await ws.recv())
                    if frame["type"] == "ack" or frame["type"] == "error":
                        break
            assert frame == {"type": "ack", "ref": "p1", "runId": frame.get("runId")}, frame
            tokens = (await ha.get(f"/api/users/{made['user']['id']}/tokens")).json()["tokens"]
            revoked_at = time.monotonic()
            assert (await ha.delete(f"/api/tokens/{tokens[0]['id']}")).status_code == 204
            with anyio.fail_after(5):
                try:
                    while True:
                        await ws.recv()
                except ConnectionClosed as closed:
                    code = closed.rcvd.code if closed.rcvd else None
            took = time.monotonic() - revoked_at
        assert code == 4401
        assert took < 1.0, took
        for client in (ha, hb):
            refused = await client.get("/api/me", headers=as_member)
            assert refused.status_code == 401
        stored = (await ha.get(f"/api/sessions/{sid}/messages", params={"role": "user"})).json()
        assert stored["messages"][0]["content"]["by"] == {"id": made["user"]["id"], "name": "mo"}
