"""End to end on a real uvicorn process: REST with httpx, the stream with the
``websockets`` client library. Nothing is shared with the server but the network (and,
for the restart check, its database file)."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from tests.conftest import LiveServer

pytestmark = pytest.mark.anyio

Frame = dict[str, Any]
WAIT = 30  # seconds any single wait on the server may take before the test fails


async def receive(ws: ClientConnection) -> Frame:
    with anyio.fail_after(WAIT):
        frame: Frame = json.loads(await ws.recv())
    return frame


async def open_stream(ws: ClientConnection) -> tuple[Frame, list[Frame]]:
    hello = await receive(ws)
    assert hello["type"] == "hello", hello
    replay = []
    while (frame := await receive(ws))["type"] != "live":
        assert frame["type"] == "message", frame
        replay.append(frame["message"])
    return hello, replay


async def receive_until(ws: ClientConnection, done: Callable[[Frame], bool]) -> list[Frame]:
    """Message frames up to and including the first one ``done`` accepts."""
    frames = []
    while True:
        frame = await receive(ws)
        assert frame["type"] == "message", frame
        frames.append(frame["message"])
        if done(frame["message"]):
            return frames


def run_end(run_id: str) -> Callable[[Frame], bool]:
    def match(message: Frame) -> bool:
        content = message["content"]
        return (
            content["type"] == "run"
            and content["runId"] == run_id
            and content["status"] != "running"
        )

    return match


def is_text_chunk(message: Frame) -> bool:
    return message["content"]["type"] == "text" and message["content"].get("partial") is True


async def close_code(ws: ClientConnection) -> int:
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            await receive(ws)
    assert closed.value.rcvd is not None
    return int(closed.value.rcvd.code)


async def new_session(http: httpx.AsyncClient) -> str:
    repos = (await http.get("/api/repos")).json()["repos"]
    response = await http.post("/api/sessions", json={"repoId": repos[0]["id"]})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def start_turn(http: httpx.AsyncClient, session_id: str, text: str) -> str:
    response = await http.post(f"/api/sessions/{session_id}/prompt", json={"text": text})
    assert response.status_code == 202, response.text
    return str(response.json()["runId"])


def assert_contiguous(messages: list[Frame]) -> None:
    seqs = [m["seq"] for m in messages]
    assert seqs == list(range(1, len(seqs) + 1)), seqs


@pytest.fixture
def server(live_server: Callable[..., LiveServer]) -> LiveServer:
    return live_server(MAX_WS_MESSAGE_BYTES=4096)


async def test_turn_live_then_reconnect_mid_turn_without_gap_or_duplicate(
    server: LiveServer,
) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=WAIT) as http:
        session_id = await new_session(http)
        url = f"{server.ws_url}/ws/sessions/{session_id}"

        # A whole turn, live.
        async with connect(url) as ws:
            hello, replay = await open_stream(ws)
            assert hello["session"]["id"] == session_id and hello["lastSeq"] == 1
            first = await start_turn(http, session_id, "hello")
            received = replay + await receive_until(ws, run_end(first))
        assert_contiguous(received)
        assert received[-1]["content"]["status"] == "completed"
        assert received[-1]["content"]["stopReason"] == "end_turn"

        # Disconnect in the middle of a slow turn...
        slow = await start_turn(http, session_id, "slow 20")
        async with connect(f"{url}?after={received[-1]['seq']}") as ws:
            received += (await open_stream(ws))[1]
            chunks = sum(is_text_chunk(m) for m in received if m["runId"] == slow)
            while chunks < 3:
                message = (await receive_until(ws, lambda m: True))[0]
                received.append(message)
                chunks += is_text_chunk(message)
        assert not run_end(slow)(received[-1])
        cut = received[-1]["seq"]

        # ...and come back where it stopped.
        async with connect(f"{url}?after={cut}") as ws:
            hello, replay = await open_stream(ws)
            assert hello["lastSeq"] >= cut
            assert all(m["seq"] > cut for m in replay)
            received += replay
            if not run_end(slow)(received[-1]):
                received += await receive_until(ws, run_end(slow))

        assert_contiguous(received)
        end = received[-1]["content"]
        assert (end["type"], end["runId"], end["status"], end["stopReason"]) == (
            "run",
            slow,
            "completed",
            "end_turn",
        )
        assert sum(is_text_chunk(m) for m in received if m["runId"] == slow) >= 20
        stored = (
            await http.get(f"/api/sessions/{session_id}/messages", params={"limit": 5000})
        ).json()["messages"]
        assert received == stored


async def test_two_viewers_see_the_same_sequence_and_big_frames_close_1009(
    server: LiveServer,
) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=WAIT) as http:
        session_id = await new_session(http)
        url = f"{server.ws_url}/ws/sessions/{session_id}"
        async with connect(url) as one, connect(url) as two:
            replay_one = (await open_stream(one))[1]
            replay_two = (await open_stream(two))[1]
            run_id = await start_turn(http, session_id, "tools 3")
            seen: list[list[Frame]] = [[], []]

            async def watch(ws: ClientConnection, index: int) -> None:
                seen[index] = await receive_until(ws, run_end(run_id))

            async with anyio.create_task_group() as tg:
                tg.start_soon(watch, one, 0)
                tg.start_soon(watch, two, 1)
        assert replay_one == replay_two
        assert seen[0] == seen[1]
        assert_contiguous(replay_one + seen[0])
        assert seen[0][-1]["content"]["status"] == "completed"

        # A client frame over MAX_WS_MESSAGE_BYTES (4096 here) closes that viewer with 1009
        # (a prompt frame has more room: tests/security/test_prompt_body.py).
        async with connect(url) as ws:
            await open_stream(ws)
            await ws.send(json.dumps({"type": "cancel", "pad": "x" * 5000, "id": "big"}))
            assert await close_code(ws) == 1009
        users = (
            await http.get(f"/api/sessions/{session_id}/messages", params={"role": "user"})
        ).json()
        assert [m["content"]["text"] for m in users["messages"]] == ["tools 3"]


async def test_sigterm_closes_viewers_interrupts_the_turn_and_exits(
    server: LiveServer, live_server: Callable[..., LiveServer]
) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=WAIT) as http:
        session_id = await new_session(http)
        run_id = await start_turn(http, session_id, "slow 100")
        async with connect(f"{server.ws_url}/ws/sessions/{session_id}") as ws:
            await open_stream(ws)
            await receive_until(ws, is_text_chunk)
            server.process.send_signal(signal.SIGTERM)
            assert await close_code(ws) == 1001  # we close our viewers before uvicorn would (1012)
            with anyio.fail_after(WAIT):
                await anyio.to_thread.run_sync(server.process.wait)
    assert "Traceback" not in server.log()
    assert "interrupted" in server.log()

    # The stored log says what happened to the turn.
    again = live_server(MAX_WS_MESSAGE_BYTES=4096)
    async with httpx.AsyncClient(base_url=again.url, timeout=WAIT) as http:
        stored = (
            await http.get(f"/api/sessions/{session_id}/messages", params={"type": "run"})
        ).json()["messages"]
        assert [m["content"]["status"] for m in stored] == ["running", "interrupted"]
        assert {m["content"]["runId"] for m in stored} == {run_id}
        everything = (
            await http.get(f"/api/sessions/{session_id}/messages", params={"limit": 5000})
        ).json()
        assert_contiguous(everything["messages"])


async def test_sigterm_exit_code_is_0(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=WAIT) as http:
        session_id = await new_session(http)
        async with connect(f"{server.ws_url}/ws/sessions/{session_id}") as ws:
            await open_stream(ws)
            with anyio.fail_after(WAIT):
                code = await anyio.to_thread.run_sync(server.stop)
    assert "Traceback" not in server.log()
    assert code == 0, server.log()
