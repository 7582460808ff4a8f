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
from websockets.frames import Frame, Opcode

from server.web.ws_sender import FrameSender, _header

pytestmark = pytest.mark.anyio


def _frame(size: int) -> bytes:
    """A JSON text frame of exactly ``size`` bytes (UTF-8, non-ASCII in it)."""
    head = '{"n":0,"text":"\u00e9'.encode()
    return head + b"x" * (size - len(head) - 2) + b'"}'


# Short, then every length encoding of RFC 6455's header at its edges (7-bit up to 125,
# 16-bit from 126 to 65535, 64-bit from 65536).
FRAMES = [
    b'{"n":1}',
    '{"n":2,"text":"\u00e9t\u00e9"}'.encode(),
    b'{"n":3}',
    *(_frame(size) for size in (125, 126, 65535, 65536, 200_000)),
]


async def endpoint(websocket: WebSocket) -> None:
    await websocket.accept()
    sender = FrameSender(websocket)
    await websocket.send_text("fast" if sender._protocol is not None else "fallback")
    await sender.send(FRAMES)
    await websocket.close()


APP = Starlette(routes=[WebSocketRoute("/ws", endpoint)])


@pytest.mark.parametrize("compression", [None, "deflate"])
async def test_under_uvicorn_the_frames_go_in_one_write_each_its_own_frame(
    compression: str | None,
) -> None:
    """Without an extension the sender writes the frame headers itself; with
    permessage-deflate negotiated the protocol frames (and compresses) them."""
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
            async with connect(
                f"ws://127.0.0.1:{port}/ws", compression=compression, max_size=None
            ) as ws:
                assert bool(ws.protocol.extensions) == (compression is not None)
                received = [await ws.recv() for _ in range(len(FRAMES) + 1)]
            server.should_exit = True
    assert received[0] == "fast"
    texts = [frame for frame in received[1:] if isinstance(frame, str)]  # text frames only
    assert [text.encode() for text in texts] == FRAMES


def test_any_other_asgi_server_gets_one_send_per_frame() -> None:
    with TestClient(APP) as client, client.websocket_connect("/ws") as ws:
        received = [ws.receive_text() for _ in range(len(FRAMES) + 1)]
    assert received[0] == "fallback"
    assert [frame.encode() for frame in received[1:]] == FRAMES


@pytest.mark.parametrize("size", [0, 1, 125, 126, 65535, 65536, 200_000])
def test_a_written_header_is_the_one_websockets_writes(size: int) -> None:
    data = b"x" * size
    assert _header(size) + data == Frame(Opcode.TEXT, data).serialize(mask=False, extensions=[])
