"""Turn bodies that test the host's boundaries: path probes, the environment, terminals.

Each returns the lines the framed turn reports (see ``script``).
"""

from __future__ import annotations

import asyncio
import os
import shlex

from .commands import Command
from .turn import Turn
from .wire import JsonObject, RemoteError

__all__ = ["env_names", "probe", "terminal", "terminal_start"]

PROBE_WRITE_TEXT = "written by a demo agent probe\n"
_SHOWN = 200
_START_WAIT = 5.0


async def probe(turn: Turn, command: Command) -> list[str] | None:
    """One client request per (op, path): ``read`` → fs/read_text_file, ``write`` →
    fs/write_text_file, ``terminal`` → terminal/create (``pwd`` in that cwd, then
    wait_for_exit, output, release). Paths are sent exactly as given. Every result
    (ok, or the error code) is in the tool call's rawOutput and in the reply; what an
    allowed request returned (file text, terminal output) is shown too, so a leak shows."""
    probes = [{"op": op, "path": path} for op, path in command.probes]
    await turn.tool_call(
        "call_probe", f"Probe {len(probes)} paths", "other", rawInput={"probes": probes}
    )
    await turn.tool_update("call_probe", status="in_progress")
    results = [await _probe_one(turn, op, path) for op, path in command.probes]
    await turn.tool_update("call_probe", status="completed", rawOutput={"results": results})
    allowed = sum(1 for r in results if r["ok"])
    lines = [f"Probed {len(results)} paths: {allowed} allowed, {len(results) - allowed} refused."]
    for r in results:
        outcome = "ok" if r["ok"] else f"error {r['code']}"
        lines.append(f"probe {r['op']} {r['path']!r}: {outcome}")
    return ["\n".join(lines)]


async def _probe_one(turn: Turn, op: str, path: str) -> JsonObject:
    result: JsonObject = {"op": op, "path": path, "ok": False, "code": None}
    try:
        if op == "read":
            answer = await turn.request("fs/read_text_file", {"path": path})
            content = answer.get("content") if isinstance(answer, dict) else None
            result["content"] = str(content)[:_SHOWN]
        elif op == "write":
            await turn.request("fs/write_text_file", {"path": path, "content": PROBE_WRITE_TEXT})
        else:
            created = await turn.request("terminal/create", {"command": "pwd", "cwd": path})
            ref = {"terminalId": created["terminalId"]}
            await turn.request("terminal/wait_for_exit", ref)
            output = await turn.request("terminal/output", ref)
            await turn.request("terminal/release", ref)
            result["content"] = str(output.get("output"))[:_SHOWN]
    except RemoteError as exc:
        result["code"] = exc.code
        result["message"] = exc.message
        return result
    result["ok"] = True
    return result


async def env_names(turn: Turn, command: Command) -> list[str] | None:
    """The names (never the values) of this process's environment variables."""
    return ["env: " + " ".join(sorted(os.environ))]


async def terminal(turn: Turn, command: Command) -> list[str] | None:
    """Run a command in a client terminal, shown in the tool call (terminal content),
    its output in rawOutput; then release it."""
    argv = list(command.argv)
    title = f"Run {shlex.join(argv)}"
    raw_input: JsonObject = {"command": argv[0], "args": argv[1:], "cwd": turn.cwd}
    if command.output_limit is not None:
        raw_input["outputByteLimit"] = command.output_limit
    await turn.tool_call("call_terminal", title, "execute", rawInput=raw_input)
    if not turn.client.terminal:
        error = "the client cannot run terminals"
        await turn.tool_update("call_terminal", status="failed", rawOutput={"error": error})
        return [f"I did not run {title[4:]}: {error}."]
    try:
        created = await turn.request("terminal/create", raw_input)
    except RemoteError as exc:
        await turn.tool_update(
            "call_terminal", status="failed", rawOutput={"error": exc.message, "code": exc.code}
        )
        return [f"I could not start {title[4:]}: {exc.message}."]
    ref = {"terminalId": created["terminalId"]}
    shown = [{"type": "terminal", "terminalId": ref["terminalId"]}]
    await turn.tool_update("call_terminal", status="in_progress", content=shown)
    try:
        await turn.request("terminal/wait_for_exit", ref)
        output = await turn.request("terminal/output", ref)
    finally:
        await turn.request("terminal/release", ref)
    status = output.get("exitStatus") or {}
    ok = status.get("exitCode") == 0
    await turn.tool_update(
        "call_terminal", status="completed" if ok else "failed", content=shown, rawOutput=output
    )
    size = len(str(output.get("output", "")).encode())
    truncated = " (truncated)" if output.get("truncated") else ""
    return [f"{title[4:]} exited with {_describe(status)}; {size} bytes of output{truncated}."]


async def terminal_start(turn: Turn, command: Command) -> list[str] | None:
    """Start a command in a client terminal and leave it running (never released):
    report its id and its first line of output (or all of it, if it ends first)."""
    argv = list(command.argv)
    await turn.tool_call(
        "call_terminal",
        f"Start {shlex.join(argv)}",
        "execute",
        rawInput={"command": argv[0], "args": argv[1:], "cwd": turn.cwd},
    )
    try:
        created = await turn.request(
            "terminal/create", {"command": argv[0], "args": argv[1:], "cwd": turn.cwd}
        )
    except RemoteError as exc:
        await turn.tool_update(
            "call_terminal", status="failed", rawOutput={"error": exc.message, "code": exc.code}
        )
        return [f"I could not start it: {exc.message}."]
    ref = {"terminalId": created["terminalId"]}
    output: JsonObject = {}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _START_WAIT
    while loop.time() < deadline:
        output = await turn.request("terminal/output", ref)
        if "\n" in str(output.get("output")) or output.get("exitStatus"):
            break
        await asyncio.sleep(0.02)
    shown = [{"type": "terminal", "terminalId": ref["terminalId"]}]
    await turn.tool_update(
        "call_terminal", status="completed", content=shown, rawOutput={**output, **ref}
    )
    return [f"terminal {ref['terminalId']} started: {output.get('output', '')}"]


def _describe(status: JsonObject) -> str:
    if status.get("signal"):
        return f"signal {status['signal']}"
    return f"exit code {status.get('exitCode')}"
