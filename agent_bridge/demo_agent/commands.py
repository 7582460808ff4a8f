"""Prompt commands: which turn a prompt text selects.

A text that does not match a command exactly (name and arguments) is an ordinary
prompt and gets the default turn.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, replace

__all__ = ["Command", "parse_command", "prompt_text"]

MAX_TOOLS = 1000
MAX_SLOW = 10_000
MAX_FLOOD = 10_000_000
MAX_HUGE = 1 << 30
MAX_STDERR_MB = 1024
MAX_PROBES = 10_000
MAX_OUTPUT_LIMIT = 1 << 30
PROBE_OPS = ("read", "write", "terminal")

_WRITE = re.compile(r"(write|save)\s+(\S+)(?:\s+(.*))?", re.DOTALL)
_ELICIT = re.compile(r"elicit\s+(\S+)(?:\s+(.*))?", re.DOTALL)
_CLIENT_TOOL = re.compile(r"client-tool\s+(\S+)(?:\s+(.*))?", re.DOTALL)


@dataclass(frozen=True)
class Command:
    name: str = "default"
    """default, write, save, elicit, client-tool, client-tools, ask-permission-bare, tools,
    slow, flood, history, crash, hang, grandchildren, garbage, huge-line, endless-line,
    stderr-flood, probe, env-names, terminal, terminal-start."""
    count: int = 0
    path: str = ""
    content: str = ""
    permission: bool = False
    flood_kind: str = "text"
    rate: float | None = None
    ignore_sigterm: bool = False
    probes: tuple[tuple[str, str], ...] = ()
    """probe / probe-all: (op, path) pairs, op one of PROBE_OPS."""
    argv: tuple[str, ...] = ()
    """terminal / terminal-start: the command and its arguments."""
    output_limit: int | None = None
    """terminal: outputByteLimit to ask for."""


def prompt_text(prompt: list[object]) -> str:
    """The text of a prompt: its text blocks, joined by newlines, stripped."""
    parts = [
        block["text"]
        for block in prompt
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
    return "\n".join(parts).strip()


def command_text(prompt: list[object]) -> str:
    """The text a command is read from: the prompt's last text block, so a command
    still works when the client puts earlier context in blocks before it."""
    texts = [
        block["text"]
        for block in prompt
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
    return texts[-1].strip() if texts else ""


def parse_command(text: str) -> Command:
    """The command a prompt text selects. A leading ``ignore-sigterm`` applies to
    the rest of the text (``ignore-sigterm hang``)."""
    words = text.split()
    if words and words[0] == "ignore-sigterm":
        rest = text.strip()[len("ignore-sigterm") :].strip()
        inner = parse_command(rest) if rest else Command()
        return replace(inner, ignore_sigterm=True)
    if match := _WRITE.fullmatch(text.strip()):
        return Command(match.group(1), path=match.group(2), content=match.group(3) or "")
    if match := _ELICIT.fullmatch(text.strip()):  # path: the mode; content: its argument
        return Command("elicit", path=match.group(1), content=match.group(2) or "")
    if match := _CLIENT_TOOL.fullmatch(text.strip()):  # path: the tool; content: its input
        return Command("client-tool", path=match.group(1), content=match.group(2) or "")
    if text.strip() == "client-tools":
        return Command("client-tools")
    if words and words[0] in ("probe", "probe-all", "terminal", "terminal-start"):
        rest = text.strip()[len(words[0]) :].strip()
        parsed = _parse_rest(words[0], rest)
        return parsed if parsed is not None else Command()
    if not words:
        return Command()
    name, args = words[0], words[1:]
    parsed = _parse_args(name, args)
    return parsed if parsed is not None else Command()


def _parse_args(name: str, args: list[str]) -> Command | None:
    if name in (
        "ask-permission-bare",
        "history",
        "crash",
        "hang",
        "grandchildren",
        "garbage",
        "endless-line",
        "env-names",
    ):
        return Command(name) if not args else None
    if name == "tools" and 1 <= len(args) <= 2:
        count = _count(args[0], MAX_TOOLS)
        permission = args[1:] == ["permission"]
        if count is None or (len(args) == 2 and not permission):
            return None
        return Command("tools", count=count, permission=permission)
    if name == "slow" and len(args) <= 1:
        count = _count(args[0], MAX_SLOW) if args else 20
        return Command("slow", count=count) if count is not None else None
    if name == "huge-line" and len(args) == 1:
        count = _count(args[0], MAX_HUGE)
        return Command("huge-line", count=count) if count is not None else None
    if name == "stderr-flood" and len(args) <= 1:
        count = _count(args[0], MAX_STDERR_MB) if args else 20
        return Command("stderr-flood", count=count) if count is not None else None
    if name == "flood" and args:
        return _parse_flood(args)
    return None


def _parse_rest(name: str, rest: str) -> Command | None:
    """The commands whose argument is the rest of the text, not words."""
    if name == "probe":
        op, _, path = rest.partition(" ")
        path = path.strip()
        return Command("probe", probes=((op, path),)) if op in PROBE_OPS and path else None
    if name == "probe-all":
        try:
            items = json.loads(rest)
        except ValueError:
            return None
        if not isinstance(items, list) or not 0 < len(items) <= MAX_PROBES:
            return None
        probes = []
        for item in items:
            if not (
                isinstance(item, list)
                and len(item) == 2
                and item[0] in PROBE_OPS
                and isinstance(item[1], str)
            ):
                return None
            probes.append((item[0], item[1]))
        return Command("probe", probes=tuple(probes))
    try:
        argv = shlex.split(rest)
    except ValueError:
        return None
    limit = None
    if name == "terminal" and argv and argv[0].startswith("limit="):
        limit = _count(argv.pop(0)[len("limit=") :], MAX_OUTPUT_LIMIT)
        if limit is None:
            return None
    return Command(name, argv=tuple(argv), output_limit=limit) if argv else None


def _parse_flood(args: list[str]) -> Command | None:
    count = _count(args[0], MAX_FLOOD)
    kind = "text"
    rate: float | None = None
    for arg in args[1:]:
        if arg in ("text", "tool"):
            kind = arg
        elif arg.startswith("rate="):
            try:
                rate = float(arg[5:])
            except ValueError:
                return None
            if not 0 < rate < float("inf"):
                return None
        else:
            return None
    if count is None:
        return None
    return Command("flood", count=count, flood_kind=kind, rate=rate)


def _count(text: str, limit: int) -> int | None:
    if not re.fullmatch(r"[0-9]{1,12}", text):
        return None
    value = int(text)
    return value if value <= limit else None
