"""Misbehaviours: turns that break the rules on purpose, for the host's tests."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Awaitable, Callable

from .commands import Command
from .turn import Turn, text_block
from .wire import log

__all__ = ["MISBEHAVIOURS", "STDERR_LINE"]

STDERR_LINE = b"demo agent: stderr flood " + b"." * 38 + b"\n"  # 64 bytes
_MIB = 1 << 20


async def crash(turn: Turn, command: Command) -> str:
    """Two text chunks, a line on stderr, exit code 3."""
    await turn.say(f"You said: {turn.text}\n\n")
    await turn.say("Crashing on purpose.")
    await turn.wire.wait_drained(timeout=2.0)
    log("crashing on purpose")
    os._exit(3)


async def hang(turn: Turn, command: Command) -> str:
    """One text chunk, then silence for good: no answer, cancel and stdin EOF ignored."""
    await turn.say(f"You said: {turn.text}\n\nHanging now.")
    await turn.wire.wait_drained(timeout=2.0)
    turn.wire.stop_listening()
    turn.wire.muted = True
    log("hanging on purpose")
    await asyncio.Event().wait()  # forever
    raise AssertionError("unreachable")


async def grandchildren(turn: Turn, command: Command) -> str:
    """Two ``sleep 1000`` children in our process group, then a normal end."""
    for _ in range(2):
        turn.children.append(
            # Popen returns at once; the children are the point.
            subprocess.Popen(  # noqa: ASYNC220
                ["sleep", "1000"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
            )
        )
    pids = " ".join(str(child.pid) for child in turn.children[-2:])
    await turn.say(f"You said: {turn.text}\n\n")
    await turn.say(f"grandchildren: {pids}")
    await turn.usage()
    return "end_turn"


async def huge_line(turn: Turn, command: Command) -> str:
    """One agent_message_chunk whose text is N bytes, then a normal end."""
    text = "x" * command.count
    await turn.update({"sessionUpdate": "agent_message_chunk", "content": text_block(text)})
    await turn.say(f"You said: {turn.text}")
    await turn.usage()
    return "end_turn"


async def endless_line(turn: Turn, command: Command) -> str:
    """The start of a session/update line that never ends, 1 MiB at a time, until
    killed (cancel and stdin EOF are ignored)."""
    turn.wire.stop_listening()
    start = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": turn.session.id,
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text"}},
        },
    }
    opening = json.dumps(start, separators=(",", ":"))[: -len("}}}}")] + ',"text":"'
    await turn.wire.send(opening.encode())
    chunk = b"x" * _MIB
    while True:
        await turn.wire.send(chunk)
        await asyncio.sleep(0)


async def stderr_flood(turn: Turn, command: Command) -> str:
    """``count`` MiB of 64-byte lines on stderr, then a normal end. The writes block
    while the client does not read stderr."""
    block = STDERR_LINE * (_MIB // len(STDERR_LINE))
    for _ in range(command.count):
        view = memoryview(block)
        while view:
            view = view[os.write(2, view) :]
        await asyncio.sleep(0)
    await turn.say(f"You said: {turn.text}\n\n")
    await turn.say(f"Wrote {command.count} MiB to stderr.")
    await turn.usage()
    return "end_turn"


MISBEHAVIOURS: dict[str, Callable[[Turn, Command], Awaitable[str]]] = {
    "crash": crash,
    "hang": hang,
    "grandchildren": grandchildren,
    "huge-line": huge_line,
    "endless-line": endless_line,
    "stderr-flood": stderr_flood,
}
