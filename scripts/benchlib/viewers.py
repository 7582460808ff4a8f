"""The WebSocket client process: many viewers of one session in one asyncio process.

Run as ``python -m benchlib.viewers '<job JSON>'``; prints one JSON result line. A job
is ``{"url", "viewers", "expect", "prompt", "timeout", "latency"}``: open ``viewers``
connections, wait until each has seen ``{"type": "live"}``, then viewer 0 sends
``{"type": "prompt", "text": prompt}`` and every viewer counts the flood messages
(texts that start with ``t=<write time> i=<index>``) until it has ``expect`` of them.

The same client measures the real server and the bare relay (``benchlib.bare``): both
speak hello/replay → live → messages. Each viewer also checks that message seqs come
without gap or duplicate. Receive times are ``time.time()`` right after ``recv()``, the
same clock the agent stamps with.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

__all__ = ["main", "run_job"]

CONNECT_CONCURRENCY = 20


@dataclass
class _Viewer:
    count: int = 0
    first_recv: float | None = None
    last_recv: float | None = None
    first_t: float | None = None
    last_t: float | None = None
    last_seq: int | None = None
    gaps: int = 0
    close_code: int | None = None
    errors: list[Any] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)


def _flood_text(content: dict[str, Any]) -> str | None:
    kind = content.get("type")
    if kind == "text":
        return content["text"] if content.get("partial") else None
    if kind == "tool":
        blocks = content.get("content") or []
        if blocks and isinstance(blocks[0], dict):
            inner = blocks[0].get("content")
            if isinstance(inner, dict):
                return inner.get("text")
    return None


async def _open(url: str, gate: asyncio.Semaphore) -> ClientConnection:
    async with gate:
        ws = await connect(
            url,
            compression=None,
            max_size=None,
            ping_interval=None,
            proxy=None,
            open_timeout=60,
            close_timeout=5,
        )
        while True:  # hello, replay, then live
            frame = await ws.recv()
            if isinstance(frame, str) and frame.startswith('{"type":"live"'):
                return ws


async def _consume(ws: ClientConnection, viewer: _Viewer, expect: int, latency: bool) -> None:
    loads, now = orjson.loads, time.time
    try:
        while viewer.count < expect:
            frame = await ws.recv()
            received = now()
            msg = loads(frame)
            kind = msg.get("type")
            if kind != "message":
                if kind == "error":
                    viewer.errors.append(msg.get("error"))
                    return
                continue
            message = msg["message"]
            seq = message["seq"]
            if viewer.last_seq is not None and seq != viewer.last_seq + 1:
                viewer.gaps += 1
            viewer.last_seq = seq
            text = _flood_text(message["content"])
            if not text or not text.startswith("t="):
                continue
            t = float(text[2 : text.index(" ")])
            viewer.count += 1
            if viewer.first_recv is None:
                viewer.first_recv, viewer.first_t = received, t
            viewer.last_recv, viewer.last_t = received, t
            if latency:
                viewer.latencies.append(received - t)
    except ConnectionClosed as exc:
        viewer.close_code = exc.rcvd.code if exc.rcvd is not None else 1006


async def run_job(job: dict[str, Any]) -> dict[str, Any]:
    count, expect = int(job["viewers"]), int(job["expect"])
    gate = asyncio.Semaphore(CONNECT_CONCURRENCY)
    opened = time.perf_counter()
    conns = await asyncio.gather(*(_open(job["url"], gate) for _ in range(count)))
    connect_seconds = time.perf_counter() - opened
    viewers = [_Viewer() for _ in conns]
    tasks = [
        asyncio.create_task(_consume(ws, v, expect, bool(job.get("latency"))))
        for ws, v in zip(conns, viewers, strict=True)
    ]
    sent = time.time()
    if job.get("prompt"):
        await conns[0].send(
            orjson.dumps({"type": "prompt", "text": job["prompt"], "id": "bench"}).decode()
        )
    _done, pending = await asyncio.wait(tasks, timeout=float(job.get("timeout", 120)))
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    await asyncio.gather(*(ws.close() for ws in conns), return_exceptions=True)
    firsts = [v.first_recv for v in viewers if v.first_recv is not None]
    lasts = [v.last_recv for v in viewers if v.last_recv is not None]
    first_ts = [v.first_t for v in viewers if v.first_t is not None]
    last_ts = [v.last_t for v in viewers if v.last_t is not None]
    latencies = sorted(x for v in viewers for x in v.latencies)
    return {
        "viewers": count,
        "expect": expect,
        "received": sum(v.count for v in viewers),
        "complete": sum(v.count >= expect for v in viewers),
        "timed_out": len(pending),
        "gaps": sum(v.gaps for v in viewers),
        "close_codes": sorted({v.close_code for v in viewers if v.close_code is not None}),
        "errors": [e for v in viewers for e in v.errors][:5],
        "connect_seconds": connect_seconds,
        "prompt_sent": sent,
        "first_t": min(first_ts) if first_ts else None,
        "last_t": max(last_ts) if last_ts else None,
        "first_recv": min(firsts) if firsts else None,
        "last_recv": max(lasts) if lasts else None,
        "latencies": latencies if job.get("latency") else [],
    }


def main() -> None:
    job = json.loads(sys.argv[1])
    result = asyncio.run(run_job(job))
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
