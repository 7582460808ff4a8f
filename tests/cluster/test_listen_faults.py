"""Issue 17, item 9: a failing LISTEN connection does not stop the node.

Two real nodes on one real PostgreSQL; node A runs a long turn, a viewer watches it through
node B. B's LISTEN backend is terminated (``pg_terminate_backend``) while the database
refuses new connections, so B's reconnects fail for a while: B keeps serving (it used to
exit: the failed connect ended its task group), reconnects with backoff once connections
are allowed again, and its viewer, closed as fallen behind (4008) once B listens again,
catches up from the database with its cursor: every message, in order, with no gap.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import asyncpg
import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.conftest import PG_SERVER
from tests.helpers import wait_for_async

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.postgres,
    pytest.mark.skipif(
        not PG_SERVER,
        reason="needs PostgreSQL: run through ./scripts/test (AGENT_SESSIONS_TEST_PG)",
    ),
]

CLOSE_BEHIND = 4008


def plain(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


async def follow(
    ws_base: str, sid: str, until: Any, out: list[dict[str, Any]], closes: list[int | None]
) -> None:
    """Watch a session as the UI does: on a 4008 close, reconnect with the cursor. Every
    message must follow the one before (seq + 1) across reconnections."""
    cursor = 0
    while True:
        async with connect(f"{ws_base}/ws/sessions/{sid}?after={cursor}") as ws:
            try:
                while True:
                    frame = json.loads(await ws.recv())
                    if frame["type"] != "message":
                        continue
                    message = frame["message"]
                    assert message["seq"] == cursor + 1, (cursor, message["seq"])
                    out.append(message)
                    cursor = message["seq"]
                    if until(message):
                        return
            except ConnectionClosed as exc:
                code = exc.rcvd.code if exc.rcvd is not None else None
                closes.append(code)
                assert code == CLOSE_BEHIND, code


async def wait_log(node: Any, text: str, timeout: float = 30) -> None:
    """Poll a node's log file (a process we do not own) until ``text`` appears."""

    async def logged() -> bool:
        assert node.process.poll() is None, f"node exited:\n{node.log()[-3000:]}"
        return text in node.log()

    await wait_for_async(logged, lambda: f"no {text!r} in the log:\n{node.log()[-3000:]}", timeout)


async def test_a_lost_listen_connection_is_reconnected_and_viewers_catch_up(
    live_server: Any,
) -> None:
    a = live_server(NODE_ID="node-a", LEASE_SECONDS=5, CLUSTER_SECRET="s3cret")
    b = live_server(NODE_ID="node-b", LEASE_SECONDS=5, CLUSTER_SECRET="s3cret")
    database_url = plain(a.env["DATABASE_URL"])
    database = database_url.rsplit("/", 1)[1]
    admin = await asyncpg.connect(database_url.rsplit("/", 1)[0] + "/postgres")
    try:
        async with (
            httpx.AsyncClient(base_url=a.url, timeout=30) as ha,
            httpx.AsyncClient(base_url=b.url, timeout=30) as hb,
        ):
            repo = (await ha.get("/api/repos")).json()["repos"][0]["id"]
            sid = (await ha.post("/api/sessions", json={"repoId": repo})).json()["id"]
            seen: list[dict[str, Any]] = []
            closes: list[int | None] = []
            run_box: dict[str, str] = {}

            def run_ended(m: dict[str, Any]) -> bool:
                content = m["content"]
                return (
                    content["type"] == "run"
                    and content["runId"] == run_box.get("id")
                    and content["status"] != "running"
                )

            async def break_b_listen() -> None:
                response = await ha.post(f"/api/sessions/{sid}/prompt", json={"text": "slow 60"})
                assert response.status_code == 202, response.text
                run_box["id"] = response.json()["runId"]
                with anyio.fail_after(30):
                    while sum(1 for m in seen if m["content"]["type"] == "text") < 3:  # noqa: ASYNC110 - the viewer's list has no event
                        await anyio.sleep(0.02)
                await admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS false')
                try:
                    killed = await admin.fetch(  # this test's database: tests run in parallel
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE application_name = 'agent-sessions listen node-b' "
                        "AND datname = $1",
                        database,
                    )
                    assert [r[0] for r in killed] == [True]
                    await wait_log(b, "LISTEN connection failed")
                    assert (await hb.get("/readyz")).status_code == 200  # B keeps serving
                    assert (await hb.get(f"/api/sessions/{sid}")).status_code == 200
                finally:
                    await admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS true')
                await wait_log(b, "LISTEN connection restored")

            with anyio.fail_after(90):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(follow, b.ws_url, sid, run_ended, seen, closes)
                    await break_b_listen()
            assert seen[-1]["content"]["status"] == "completed"
            assert closes == [CLOSE_BEHIND]  # closed once, after B listened again
            stored = (await hb.get(f"/api/sessions/{sid}/messages", params={"limit": 5000})).json()[
                "messages"
            ]
            upto = seen[-1]["seq"]
            assert [m["seq"] for m in seen] == list(range(1, upto + 1))
            assert [m["content"] for m in seen] == [m["content"] for m in stored[:upto]]
            assert b.process.poll() is None and a.process.poll() is None
    finally:
        await admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS true')
        await admin.close()
