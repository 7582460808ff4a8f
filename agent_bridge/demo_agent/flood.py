"""Flood turns: N updates as fast as possible, or paced at R per second.

Each flood update carries ``_meta.demo = {"t": <time.time() when written>, "i": i}``
on the update object, for latency and loss measurements. Because the server keeps
``_meta`` only in the raw frame (which the WebSocket stream does not carry), the text
itself starts with the same facts: ``t=<time.time() when built> i=<i> `` (the time the
update was made, just before it is queued for writing). Unpaced, lines are batched
(flushed when the writer's queue runs empty or every BATCH_LINES lines); paced, every
line is flushed. The schedule is monotonic: line i is due at start + i / R, so a late
line does not push the following ones back.
"""

from __future__ import annotations

import asyncio
import time

from .commands import Command
from .turn import Turn, text_block
from .wire import JsonObject

__all__ = ["TOOL_CALL_ID", "make_update", "parse_stamp", "run"]

TOOL_CALL_ID = "call_flood"
_TEXT_BYTES = 100
_TOOL_BYTES = 5 * 1024


async def run(turn: Turn, command: Command) -> str:
    count, rate, tool = command.count, command.rate, command.flood_kind == "tool"
    if tool:
        await turn.tool_call(TOOL_CALL_ID, f"Flood of {count} updates", "other")
    start = time.monotonic()
    for i in range(count):
        if rate is not None:
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        stamp: JsonObject = {"t": 0.0, "i": i}
        update = make_update("tool" if tool else "text", i, count)
        update["_meta"] = {"demo": stamp}
        await turn.update(update, flush=rate is not None, stamp=stamp)
    if tool:
        await turn.tool_update(TOOL_CALL_ID, status="completed", rawOutput={"updates": count})
    await turn.say(f"You said: {turn.text}\n\nFlooded {count} updates.")
    await turn.usage()
    return "end_turn"


def parse_stamp(text: str) -> tuple[float, int] | None:
    """``(t, i)`` from the start of a flood text, or None for any other text."""
    if not text.startswith("t="):
        return None
    try:
        t, i = text[2:].split(" ", 2)[:2]
        return float(t), int(i.removeprefix("i="))
    except ValueError:
        return None


def make_update(kind: str, i: int, count: int) -> JsonObject:
    """Flood update ``i`` of ``count`` (``kind`` is ``text`` or ``tool``), stamped now;
    without ``_meta`` (the benchmark builds the same rows with it)."""
    return _tool_update(i, count) if kind == "tool" else _text_update(i, count)


def _prefix(i: int, count: int) -> str:
    return f"t={time.time():.6f} i={i} flood {i + 1}/{count} "


def _text_update(i: int, count: int) -> JsonObject:
    text = _prefix(i, count).ljust(_TEXT_BYTES - 1, ".") + "\n"
    return {"sessionUpdate": "agent_message_chunk", "content": text_block(text)}


def _tool_update(i: int, count: int) -> JsonObject:
    text = (_prefix(i, count) + "\n").ljust(_TOOL_BYTES, "x")
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": TOOL_CALL_ID,
        "status": "in_progress",
        "content": [{"type": "content", "content": text_block(text)}],
    }
