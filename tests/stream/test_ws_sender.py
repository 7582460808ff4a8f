"""server/web/ws_sender.py: under the real uvicorn protocol the server runs with, a
viewer's queued frames go out in one socket write, each still its own text frame, in
order; under any other ASGI server (Starlette's test client) it falls back to one send per
frame. The fast path finds uvicorn's protocol through its internals, so this test is what
notices an uvicorn release that moves them."""

from __future__ import annotations

import socket

import anyio
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.testclient import TestClient
from starlette.websockets import WebSocket
from websockets.asyncio.client import connect

from server.web.ws_sender import FrameSender

pytestmark = pytest.mark.anyio

FRAMES = [b'{"n":1}', '{"n":2,"text":"\u00e9t\u00e9"}'.encode(), b'{"n":3}']


async def endpoint(websocket: WebSocket) -> None:
    await websocket.accept()
    sender = FrameSender(websocket)
    await websocket.send_text("fast" if sender._protocol is not None else "fallback")
    await sender.send(FRAMES)
    await websocket.close()


APP = Starlette(routes=[WebSocketRoute("/ws", endpoint)])


async def test_under_uvicorn_the_frames_go_in_one_write_each_its_own_frame() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(
            APP, host="127.0.0.1", port=port, ws="websockets-sansio", log_level="warning"
        )
        server = uvicorn.Server(config)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.serve, [sock])
            with anyio.fail_after(10):
                while not server.started:  # noqa: ASYNC110 - uvicorn offers no event for it
                    await anyio.sleep(0.01)
            async with connect(f"ws://127.0.0.1:{port}/ws") as ws:
                received = [await ws.recv() for _ in range(4)]
            server.should_exit = True
    assert received[0] == "fast"
    assert [frame.encode() for frame in received[1:]] == FRAMES


def test_any_other_asgi_server_gets_one_send_per_frame() -> None:
    with TestClient(APP) as client, client.websocket_connect("/ws") as ws:
        received = [ws.receive_text() for _ in range(4)]
    assert received[0] == "fallback"
    assert [frame.encode() for frame in received[1:]] == FRAMES
