"""The broadcast limit: a bare ``websockets`` relay, and the line producer it relays.

``python -m benchlib.bare relay PORT``
    A minimal ``websockets`` asyncio server (no compression, like the real server). A
    viewer gets ``{"type": "live"}`` at once. ``{"type": "prompt", "text": "flood N
    [text|tool] [rate=R]"}`` from any viewer starts the producer; every line it writes
    goes, as one text frame, to every viewer through a per-viewer queue and sender task
    (the real server's fan-out shape, without storing, translating or re-encoding).

``python -m benchlib.bare produce N KIND RATE``
    Writes N frames shaped exactly like the real server's (``{"type": "message",
    "message": Message}`` whose content comes from the server's own ``Translator`` given
    the demo agent's flood update), one per line, stamped ``t=<time.time()>`` in the
    text like the demo agent's flood; unpaced it writes 64 lines per ``write`` (as the
    demo agent does), paced at RATE lines/s one ``write`` per line.

``python -m benchlib.bare http PORT``
    A minimal Starlette app on uvicorn answering ``/readyz``: the start-up limit.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from collections import deque
from datetime import UTC, datetime
from typing import Any

__all__ = ["frame_for", "main"]

BATCH_LINES = 64
READ_CHUNK = 256 * 1024


def frame_for(
    kind: str, i: int, count: int, session_id: str, seq: int, translator: Any = None
) -> dict[str, Any]:
    """The message frame the real server sends for flood update ``i`` (stamped now);
    pass one ``Translator`` for a whole flood, as the server has one per session."""
    from agent_bridge.demo_agent.flood import make_update
    from server.sessions.live.translate import Translator

    update = make_update(kind, i, count)
    update["_meta"] = {"demo": {"t": time.time(), "i": i}}
    content = (translator or Translator()).translate(update, None)[-1].content
    return {
        "type": "message",
        "message": {
            "id": str(uuid.uuid4()),
            "sessionId": session_id,
            "runId": session_id,
            "seq": seq,
            "role": "system" if kind == "tool" else "agent",
            "content": content,
            "stepNumber": 0,
            "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds")[:23] + "Z",
        },
    }


# -- the producer ---------------------------------------------------------------------


def produce(count: int, kind: str, rate: float | None) -> None:
    import orjson

    from server.sessions.live.translate import Translator

    translator = Translator()
    session_id = str(uuid.uuid4())
    out = sys.stdout.buffer.raw if hasattr(sys.stdout.buffer, "raw") else sys.stdout.buffer
    fd = out.fileno()
    buffer = bytearray()
    start = time.monotonic()
    for i in range(count):
        if rate is not None:
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        buffer += orjson.dumps(
            frame_for(kind, i, count, session_id, i + 1, translator),
            option=orjson.OPT_APPEND_NEWLINE,
        )
        if rate is not None or (i + 1) % BATCH_LINES == 0 or i == count - 1:
            view = memoryview(buffer)
            while view:
                view = view[os.write(fd, view) :]
            view.release()
            buffer.clear()


# -- the relay ------------------------------------------------------------------------


class _Viewer:
    __slots__ = ("frames", "ready", "ws")

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.frames: deque[str] = deque()
        self.ready = asyncio.Event()


async def relay(port: int) -> None:
    import orjson
    from websockets.asyncio.server import serve
    from websockets.exceptions import ConnectionClosed

    viewers: set[_Viewer] = set()
    running: set[asyncio.Task[None]] = set()

    async def pump(command: str) -> None:
        args = command.split()
        count = int(args[1])
        kind = "tool" if "tool" in args[2:] else "text"
        rate = next((a[5:] for a in args[2:] if a.startswith("rate=")), "0")
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "benchlib.bare",
            "produce",
            str(count),
            kind,
            rate,
            stdout=asyncio.subprocess.PIPE,
            stdin=asyncio.subprocess.DEVNULL,
        )
        assert process.stdout is not None
        rest = b""
        try:
            while chunk := await process.stdout.read(READ_CHUNK):
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                frames = [line.decode() for line in lines]
                for viewer in viewers:
                    viewer.frames.extend(frames)
                    viewer.ready.set()
        finally:
            if process.returncode is None:
                process.kill()
            await process.wait()

    async def send(viewer: _Viewer) -> None:
        while True:
            await viewer.ready.wait()
            viewer.ready.clear()
            frames = viewer.frames
            while frames:
                await viewer.ws.send(frames.popleft())

    async def handler(ws: Any) -> None:
        viewer = _Viewer(ws)
        await ws.send('{"type":"live"}')
        viewers.add(viewer)
        sender = asyncio.create_task(send(viewer))
        try:
            async for message in ws:
                command = orjson.loads(message)
                if command.get("type") == "prompt":
                    task = asyncio.create_task(pump(str(command.get("text", ""))))
                    running.add(task)
                    task.add_done_callback(running.discard)
                    await ws.send(orjson.dumps({"type": "ack", "ref": command.get("id")}).decode())
        except ConnectionClosed:
            pass
        finally:
            viewers.discard(viewer)
            sender.cancel()

    async with serve(handler, "127.0.0.1", port, compression=None, max_size=None, ping_interval=20):
        await asyncio.Event().wait()


# -- the minimal HTTP app -------------------------------------------------------------


def http(port: int) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def readyz(_request: Any) -> JSONResponse:
        return JSONResponse({"status": "ready"})

    app = Starlette(routes=[Route("/readyz", readyz)])
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        ws="websockets-sansio",
        ws_per_message_deflate=False,
        access_log=False,
    )


def main() -> None:
    mode, *args = sys.argv[1:]
    if mode == "produce":
        rate = float(args[2])
        produce(int(args[0]), args[1], rate if rate > 0 else None)
    elif mode == "relay":
        from server import malloc

        malloc.tune()  # as the server's: the bare relay gets the same allocator
        asyncio.run(relay(int(args[0])))
    elif mode == "http":
        http(int(args[0]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main()
