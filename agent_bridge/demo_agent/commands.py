"""Prompt commands: which turn a prompt text selects.

A text that does not match a command exactly (name and arguments) is an ordinary
prompt and gets the default turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

__all__ = ["Command", "parse_command", "prompt_text"]

MAX_TOOLS = 1000
MAX_SLOW = 10_000
MAX_FLOOD = 10_000_000
MAX_HUGE = 1 << 30
MAX_STDERR_MB = 1024

_WRITE = re.compile(r"write\s+(\S+)(?:\s+(.*))?", re.DOTALL)


@dataclass(frozen=True)
class Command:
    name: str = "default"
    """default, write, ask-permission-bare, tools, slow, flood, history, crash, hang,
    grandchildren, garbage, huge-line, endless-line, stderr-flood."""
    count: int = 0
    path: str = ""
    content: str = ""
    permission: bool = False
    flood_kind: str = "text"
    rate: float | None = None
    ignore_sigterm: bool = False


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


def parse_command(text: str) -> Command:
    """The command a prompt text selects. A leading ``ignore-sigterm`` applies to
    the rest of the text (``ignore-sigterm hang``)."""
    words = text.split()
    if words and words[0] == "ignore-sigterm":
        rest = text.strip()[len("ignore-sigterm") :].strip()
        inner = parse_command(rest) if rest else Command()
        return replace(inner, ignore_sigterm=True)
    if match := _WRITE.fullmatch(text.strip()):
        return Command("write", path=match.group(1), content=match.group(2) or "")
    if not words:
        return Command()
    name, args = words[0], words[1:]
    parsed = _parse_args(name, args)
    return parsed if parsed is not None else Command()


def _parse_args(name: str, args: list[str]) -> Command | None:
    if name in ("ask-permission-bare", "history", "crash", "hang", "grandchildren", "garbage",
                "endless-line"):
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
