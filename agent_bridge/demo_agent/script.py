"""Turn scripts: the default turn and its prompt-driven variants.

Every scripted turn has the same frame: two thought chunks, the plan (all pending),
the variant's body, the plan again (all completed), the reply (``You said: T``, what
the body reports, ``Done.``) and a usage_update. A body that sees a permission request
come back ``cancelled`` ends the turn with stopReason ``cancelled`` instead.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Awaitable, Callable

from . import controls, elicit, flood, modes, probes
from .commands import Command
from .turn import Turn, text_block
from .wire import JsonObject, RemoteError

__all__ = ["PERMISSION_OPTIONS", "ask_permission", "run"]

PERMISSION_OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]
_TOOL_KINDS = ("read", "search", "execute")
_PROBE_BODIES: dict[str, tuple[Callable[[Turn, Command], Awaitable[list[str] | None]], str]] = {
    "probe": (probes.probe, "Probe the paths"),
    "env-names": (probes.env_names, "List the environment"),
    "terminal": (probes.terminal, "Run the command"),
    "terminal-start": (probes.terminal_start, "Start the command"),
}

# A body returns the lines it reports, or None when a permission request came back
# cancelled (the turn then ends with stopReason "cancelled").
Body = Callable[[Turn], Awaitable["list[str] | None"]]


async def run(turn: Turn, command: Command) -> str:
    """Play the turn ``command`` selects; returns the stop reason."""
    name = command.name
    if name == "flood":
        return await flood.run(turn, command)
    if name in modes.MISBEHAVIOURS:
        return await modes.MISBEHAVIOURS[name](turn, command)
    if name == "garbage":
        turn.start_garbage()
    if name == "default" and turn.text.startswith("/"):
        files = sorted(n for n in os.listdir(turn.cwd) if not n.startswith("."))
        reply = controls.slash_reply(turn.text, turn.session.controls, files)
        if reply is not None:
            await turn.say(reply)
            await turn.usage()
            return "end_turn"
    plan, body = _variant(command)
    return await _framed(turn, plan, body)


def _variant(command: Command) -> tuple[list[tuple[str, str]], Body]:
    name = command.name
    if name == "write":
        plan = [
            ("Read the workspace", "high"),
            (f"Write {command.path}", "high"),
            ("Answer", "medium"),
        ]

        async def write(turn: Turn) -> list[str] | None:
            read = await _read_step(turn, "call_1")
            wrote = await _write_step(turn, "call_2", command.path, command.content)
            return None if wrote is None else [read, wrote]

        return plan, write
    if name == "save":
        plan = [("Choose the file", "high"), (f"Save {command.path}", "high"), ("Answer", "medium")]

        async def save(turn: Turn) -> list[str] | None:
            if not turn.client.elicitation_form:  # no forms: the permission request asks
                wrote = await _write_step(turn, "call_2", command.path, command.content)
                return None if wrote is None else [wrote]
            chosen = await elicit.choose_file(turn, command.path)
            if chosen is None:
                return None
            path, refused = chosen
            if refused is not None:
                return [f"I did not save {path} ({refused})."]
            wrote = await _write_step(turn, "call_2", path, command.content, confirmed=True)
            return None if wrote is None else [wrote]

        return plan, save
    if name == "elicit":
        mode, argument = command.path, command.content

        async def asking(turn: Turn) -> list[str] | None:
            return await elicit.elicit_body(turn, mode, argument)

        return [("Ask the person", "high"), ("Answer", "medium")], asking
    if name == "ask-permission-bare":
        return [("Run a command", "high"), ("Answer", "medium")], _bare
    if name == "tools":
        count, permission = command.count, command.permission

        async def tools(turn: Turn) -> list[str] | None:
            return await _tools(turn, count, permission)

        return [(f"Run {count} tools", "high"), ("Summarize the results", "medium")], tools
    if name == "slow":
        count = command.count

        async def slow(turn: Turn) -> list[str] | None:
            for index in range(1, count + 1):
                if index > 1:
                    await asyncio.sleep(0.1)
                await turn.say(f"chunk {index}/{count} ")
            return [f"Streamed {count} chunks."]

        return [(f"Stream {count} chunks", "high"), ("Answer", "medium")], slow
    if name in _PROBE_BODIES:
        body_of, probe_plan = _PROBE_BODIES[name]

        async def probing(turn: Turn) -> list[str] | None:
            return await body_of(turn, command)

        return [(probe_plan, "high"), ("Answer", "medium")], probing
    if name == "history":

        async def history(turn: Turn) -> list[str] | None:
            earlier = turn.session.prompts()[:-1]
            return ["History: " + (" | ".join(earlier) if earlier else "(none)")]

        return [("Recall the conversation", "high"), ("Answer", "medium")], history

    async def default(turn: Turn) -> list[str] | None:
        return [await _read_step(turn, "call_1")]

    return [("Read the workspace", "high"), ("Answer", "medium")], default


async def _framed(turn: Turn, plan: list[tuple[str, str]], body: Body) -> str:
    await turn.think("Reading the request. ")
    await turn.think("Planning. ")
    await turn.plan([(content, priority, "pending") for content, priority in plan])
    lines = await body(turn)
    if lines is None:
        return "cancelled"
    await turn.plan([(content, priority, "completed") for content, priority in plan])
    prefix = controls.answer_prefix(turn.session.controls)
    await turn.say(f"{prefix}You said: {turn.text}\n\n")
    for line in lines:
        await turn.say(line + " ")
    await turn.say("Done.")
    await turn.usage()
    return "end_turn"


# -- reading and writing through the client ------------------------------------------


def pick_file(cwd: str) -> str | None:
    """README.md if it is a regular file in ``cwd``, else the first regular file by name."""
    try:
        names = sorted(os.listdir(cwd))
    except OSError:
        return None
    regular = [name for name in names if _is_regular(os.path.join(cwd, name))]
    if "README.md" in regular:
        return os.path.join(cwd, "README.md")
    return os.path.join(cwd, regular[0]) if regular else None


def _is_regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


async def _read_step(turn: Turn, tool_call_id: str) -> str:
    if not turn.client.read_text_file:
        return "I did not read any file (the client cannot read files)."
    path = pick_file(turn.cwd)
    if path is None:
        return f"There is no file to read in {turn.cwd}."
    name = os.path.basename(path)
    where = {"rawInput": {"path": path}, "locations": [{"path": path}]}
    await turn.tool_call(tool_call_id, f"Read {name}", "read", **where)
    await turn.tool_update(tool_call_id, status="in_progress")
    try:
        result = await turn.request("fs/read_text_file", {"path": path})
        content = result.get("content") if isinstance(result, dict) else None
        if not isinstance(content, str):
            raise RemoteError(-32603, "the answer has no content")
    except RemoteError as exc:
        await turn.tool_update(tool_call_id, status="failed", rawOutput={"error": exc.message})
        return f"I could not read {name}: {exc.message}."
    lines = len(content.splitlines())
    await turn.tool_update(
        tool_call_id,
        status="completed",
        content=[{"type": "content", "content": text_block(content[:200])}],
        rawOutput={"bytes": len(content.encode()), "lines": lines},
    )
    return f"{name} has {lines} line{'' if lines == 1 else 's'}."


async def _write_step(
    turn: Turn, tool_call_id: str, relpath: str, content: str, *, confirmed: bool = False
) -> str | None:
    """The edit tool call; None when its permission request came back cancelled.
    ``confirmed``: the person already chose to write (a form), no permission request."""
    path = os.path.join(turn.cwd, relpath)
    diff: JsonObject = {"type": "diff", "path": path, "newText": content}
    old = _old_text(path)
    if old is not None:
        diff["oldText"] = old
    fields = {"rawInput": {"path": path, "content": content}, "content": [diff]}
    title = f"Write {relpath}"
    await turn.tool_call(tool_call_id, title, "edit", locations=[{"path": path}], **fields)
    if not turn.client.write_text_file:
        error = "the client cannot write files"
        await turn.tool_update(tool_call_id, status="failed", rawOutput={"error": error})
        return f"I did not write {relpath}: {error}."
    tool_call = {"toolCallId": tool_call_id, "title": title, "kind": "edit", "status": "pending"}
    decision, error = (
        ("allow", "") if confirmed else await ask_permission(turn, {**tool_call, **fields})
    )
    if decision == "cancelled":
        return None
    if decision == "reject":
        await turn.tool_update(tool_call_id, status="failed", rawOutput={"error": error})
        return f"I did not write {relpath} ({error})."
    await turn.tool_update(tool_call_id, status="in_progress")
    try:
        await turn.request("fs/write_text_file", {"path": path, "content": content})
    except RemoteError as exc:
        await turn.tool_update(tool_call_id, status="failed", rawOutput={"error": exc.message})
        return f"I could not write {relpath}: {exc.message}."
    size = len(content.encode())
    await turn.tool_update(tool_call_id, status="completed", rawOutput={"bytes": size})
    return f"I wrote {size} bytes to {relpath}."


def _old_text(path: str) -> str | None:
    """The current text of a file we are about to replace (for the diff), if small."""
    try:
        if not _is_regular(path) or os.path.getsize(path) > 1 << 20:
            return None
        with open(path, encoding="utf-8") as file:
            return file.read()
    except (OSError, UnicodeDecodeError):
        return None


async def ask_permission(turn: Turn, tool_call: JsonObject) -> tuple[str, str]:
    """Ask the client; returns ("allow" | "reject" | "cancelled", reason for a reject).
    A kind of tool the person chose "Always allow" for is allowed without asking again."""
    kind = str(tool_call.get("kind") or "other")
    if kind in turn.session.always_allowed:
        return "allow", ""
    params = {"toolCall": tool_call, "options": PERMISSION_OPTIONS}
    try:
        answer = await turn.request("session/request_permission", params)
    except RemoteError as exc:
        return "reject", f"permission request failed: {exc.message}"
    outcome = answer.get("outcome") if isinstance(answer, dict) else None
    chosen = outcome.get("outcome") if isinstance(outcome, dict) else None
    if chosen == "cancelled":
        return "cancelled", ""
    option = outcome.get("optionId") if isinstance(outcome, dict) else None
    if chosen == "selected" and option == "allow-always":
        turn.session.always_allowed.add(kind)
    if chosen == "selected" and option in ("allow", "allow-always"):
        return "allow", ""
    if chosen == "selected" and option == "reject":
        return "reject", "rejected by user"
    return "reject", f"unknown permission outcome {outcome!r}"


# -- the other bodies -----------------------------------------------------------------


async def _bare(turn: Turn) -> list[str] | None:
    """A permission request with no tool_call before it (as gemini does)."""
    tool_call = {
        "toolCallId": "call_bare",
        "title": "Run echo hello",
        "kind": "execute",
        "status": "pending",
        "rawInput": {"command": ["echo", "hello"]},
    }
    decision, error = await ask_permission(turn, tool_call)
    if decision == "cancelled":
        return None
    if decision == "reject":
        await turn.tool_update("call_bare", status="failed", rawOutput={"error": error})
        return [f"I did not run the command ({error})."]
    await turn.tool_update(
        "call_bare",
        status="completed",
        content=[{"type": "content", "content": text_block("hello\n")}],
        rawOutput={"exitCode": 0, "output": "hello\n"},
    )
    return ["The command printed hello."]


async def _tools(turn: Turn, count: int, permission: bool) -> list[str] | None:
    failed = 0
    for k in range(1, count + 1):
        tool_call_id = f"call_{k}"
        kind = _TOOL_KINDS[(k - 1) % len(_TOOL_KINDS)]
        await turn.tool_call(tool_call_id, f"Tool {k}", kind, rawInput={"k": k})
        if permission and k == 1:
            tool_call = {
                "toolCallId": tool_call_id,
                "title": f"Tool {k}",
                "kind": kind,
                "status": "pending",
                "rawInput": {"k": k},
            }
            decision, error = await ask_permission(turn, tool_call)
            if decision == "cancelled":
                return None
            if decision == "reject":
                await turn.tool_update(tool_call_id, status="failed", rawOutput={"error": error})
                return [f"I ran no tools ({error})."]
        await turn.tool_update(tool_call_id, status="in_progress")
        await asyncio.sleep(0.01)
        if k % 3 == 0:
            failed += 1
            await turn.tool_update(
                tool_call_id, status="failed", rawOutput={"error": f"tool {k} failed"}
            )
        else:
            await turn.tool_update(tool_call_id, status="completed", rawOutput={"k": k})
    return [f"Ran {count} tools: {count - failed} completed, {failed} failed."]
