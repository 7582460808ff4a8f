"""Sessions and their histories (kept as JSON files when session/load is enabled)."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from dataclasses import dataclass, field
from typing import Any

from .controls import SessionControls
from .wire import JsonObject

__all__ = ["HistoryStore", "Session", "is_session_id"]

CONTEXT_SIZE = 200_000
_BASE_TOKENS = 1200
_PRICE_PER_TOKEN = 0.000003


def is_session_id(value: object) -> bool:
    """Our session ids are canonical uuid4 strings; anything else is unknown."""
    if not isinstance(value, str):
        return False
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


@dataclass
class Session:
    id: str
    cwd: str
    entries: list[dict[str, str]] = field(default_factory=list)
    """The conversation: {"role": "user" | "agent", "text": ...} in order."""
    cost: float = 0.0
    """Cumulative cost in USD."""
    turn: asyncio.Task[Any] | None = None
    """The body of the running turn, if any."""
    prompts_received: int = 0
    """session/prompt requests read but whose turn has not started yet."""
    cancel_early: bool = False
    """A session/cancel came while a prompt was received but not started: cancel its turn."""
    controls: SessionControls = field(default_factory=SessionControls)
    """Its mode and model (not kept on disk: a loaded session starts at the defaults)."""
    always_allowed: set[str] = field(default_factory=set)
    """Tool kinds the person chose "Always allow" for: not asked again in this session
    (as ACP's ``allow_always`` asks of an agent; not kept on disk either)."""

    def prompts(self) -> list[str]:
        return [entry["text"] for entry in self.entries if entry["role"] == "user"]

    def tokens_used(self) -> int:
        """A deterministic stand-in for the tokens in context."""
        return _BASE_TOKENS + sum(len(entry["text"]) // 4 + 4 for entry in self.entries)

    def charge(self, tokens: int) -> float:
        """Add the cost of a turn that used ``tokens``; returns the cumulative cost."""
        self.cost = round(self.cost + tokens * _PRICE_PER_TOKEN, 6)
        return self.cost

    def to_json(self) -> JsonObject:
        return {"sessionId": self.id, "cwd": self.cwd, "cost": self.cost, "entries": self.entries}


class HistoryStore:
    """``<directory>/<sessionId>.json`` per session; a None directory keeps nothing."""

    def __init__(self, directory: str | None) -> None:
        self._directory = directory

    def save(self, session: Session) -> None:
        if self._directory is None:
            return
        os.makedirs(self._directory, exist_ok=True)
        path = self._path(session.id)
        temporary = f"{path}.tmp"
        with open(temporary, "w", encoding="utf-8") as file:
            json.dump(session.to_json(), file, ensure_ascii=False)
        os.replace(temporary, path)

    def load(self, session_id: str, cwd: str) -> Session | None:
        """The stored session, or None if there is none (or it is unreadable)."""
        if self._directory is None or not is_session_id(session_id):
            return None
        try:
            with open(self._path(session_id), encoding="utf-8") as file:
                data = json.load(file)
            entries = [
                {"role": str(entry["role"]), "text": str(entry["text"])}
                for entry in data["entries"]
            ]
            cost = float(data.get("cost", 0.0))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return Session(session_id, cwd, entries, cost)

    def _path(self, session_id: str) -> str:
        assert self._directory is not None
        return os.path.join(self._directory, f"{session_id}.json")
