"""Flood turns: N updates as fast as possible, or paced at R per second.

Each flood update carries ``_meta.demo = {"t": <time.time() when written>, "i": i}``
on the update object, for latency and loss measurements. Because the server keeps
``_meta`` only in the raw frame (which the WebSocket stream does not carry), the text
itself starts with the same facts: ``t=<time.time() when built> i=<i> `` (the time the
update was made, just before it is queued for writing). Unpaced, lines are batched
(BATCH_LINES lines built and queued at once, then written); paced, every line is
flushed. The schedule is monotonic: line i is due at start + i / R, so a late line does
not push the following ones back.

A flood line is built from a template: the bytes ``json.dumps`` gives the same message
(the wire's encoding), split around the text, ``t`` and ``i``, which are filled in
per line (the text's padding, JSON-escaped, cached by length). Only ASCII digits,
letters, ``=``, ``.``, ``/`` and spaces go in unescaped, so the bytes are exactly the
encoder's. The text's ``t`` is read from the same clock reading as ``_meta``'s, 1 µs
earlier, so that rounded to 6 decimals it is never later than ``_meta``'s.
"""

from __future__ import annotations

import asyncio
import json
import time

from .commands import Command
from .turn import Turn, text_block
from .wire import BATCH_LINES, JsonObject

__all__ = ["TOOL_CALL_ID", "make_update", "parse_stamp", "run"]

TOOL_CALL_ID = "call_flood"
_TEXT_BYTES = 100
_TOOL_BYTES = 5 * 1024


async def run(turn: Turn, command: Command) -> str:
    count, rate, tool = command.count, command.rate, command.flood_kind == "tool"
    if tool:
        await turn.tool_call(TOOL_CALL_ID, f"Flood of {count} updates", "other")
    lines = _Lines(turn.session.id, "tool" if tool else "text", count)
    start = time.monotonic()
    i = 0
    while i < count:
        if rate is not None:
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        n = 1 if rate is not None or turn.garbage_pending else min(BATCH_LINES, count - i)
        data = "".join([lines.line(j) for j in range(i, i + n)]).encode()
        await turn.encoded_updates(data, n, flush=rate is not None)
        i += n
        if rate is None:
            await asyncio.sleep(0)  # the writer writes these before the next are built
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


_TEXT, _T, _I = "\x01text\x01", "\x01t\x01", "\x01i\x01"


class _Lines:
    """Flood lines of one kind for one session, from a template (see the module's
    docstring)."""

    def __init__(self, session_id: str, kind: str, count: int) -> None:
        self._kind, self._count = kind, count
        update = make_update(kind, 0, count)
        if kind == "tool":
            update["content"][0]["content"]["text"] = _TEXT
        else:
            update["content"]["text"] = _TEXT
        update["_meta"] = {"demo": {"t": _T, "i": _I}}
        message = {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": session_id, "update": update},
        }
        template = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
        template = template.replace(json.dumps(_T), _T).replace(json.dumps(_I), _I)
        head, rest = template.split(json.dumps(_TEXT))
        mid, rest = rest.split(_T)
        between, tail = rest.split(_I)
        self._head, self._mid, self._between = head + '"', '"' + mid, between
        self._tail = tail + "\n"
        self._pads: dict[int, str] = {}

    def line(self, i: int) -> str:
        t = time.time()
        prefix = f"t={t - 1e-6:.6f} i={i} flood {i + 1}/{self._count} "
        pad = self._pads.get(len(prefix))
        if pad is None:
            pad = self._pads[len(prefix)] = self._pad(len(prefix))
        return f"{self._head}{prefix}{pad}{self._mid}{t!r}{self._between}{i}{self._tail}"

    def _pad(self, length: int) -> str:
        """The JSON-escaped rest of a text whose prefix has ``length`` characters."""
        if self._kind == "tool":
            rest = ("." * length + "\n").ljust(_TOOL_BYTES, "x")[length:]
        else:
            rest = ("." * length).ljust(_TEXT_BYTES - 1, ".")[length:] + "\n"
        return json.dumps(rest, ensure_ascii=False)[1:-1]
