"""server/web/ws_sender.py: under the real uvicorn protocol the server runs with, a
viewer's queued frames go out in socket writes of about WRITE_BYTES (not one per frame,
nor a whole backlog joined in one), each still its own text frame, in order; under any
other ASGI server (Starlette's test client) it falls back to one send per
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

from server.web.ws_sender import WRITE_BYTES, FrameSender, _header

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


WRITES: list[int] = []  # the sizes of the transport writes of the frames (fast path)


async def endpoint(websocket: WebSocket) -> None:
    await websocket.accept()
    sender = FrameSender(websocket)
    await websocket.send_text("fast" if sender._protocol is not None else "fallback")
    if sender._protocol is not None:
        transport = sender._protocol.transport
        write = transport.write

        def recording(data: bytes) -> None:
            WRITES.append(len(data))
            write(data)

        transport.write = recording
    await sender.send(FRAMES)
    await websocket.close()


APP = Starlette(routes=[WebSocketRoute("/ws", endpoint)])


@pytest.mark.parametrize("compression", [None, "deflate"])
async def test_under_uvicorn_the_frames_go_in_few_writes_each_its_own_frame(
    compression: str | None,
) -> None:
    """Without an extension the sender writes the frame headers itself, a write once
    WRITE_BYTES of frames are joined; with permessage-deflate negotiated the protocol
    frames (and compresses) them, in one write."""
    WRITES.clear()
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
    if compression is None:
        framed = [len(_header(len(frame))) + len(frame) for frame in FRAMES]
        assert sum(len(frame) for frame in FRAMES[:6]) >= WRITE_BYTES  # the 6th fills one
        assert WRITES[:3] == [sum(framed[:6]), framed[6], framed[7]]
    else:
        assert len(WRITES) == 2  # the frames the protocol made, then the close frame


def test_any_other_asgi_server_gets_one_send_per_frame() -> None:
    with TestClient(APP) as client, client.websocket_connect("/ws") as ws:
        received = [ws.receive_text() for _ in range(len(FRAMES) + 1)]
    assert received[0] == "fallback"
    assert [frame.encode() for frame in received[1:]] == FRAMES


@pytest.mark.parametrize("size", [0, 1, 125, 126, 65535, 65536, 200_000])
def test_a_written_header_is_the_one_websockets_writes(size: int) -> None:
    data = b"x" * size
    assert _header(size) + data == Frame(Opcode.TEXT, data).serialize(mask=False, extensions=[])
