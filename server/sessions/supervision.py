"""What the supervisor knows about processes: which server owns an agent process (so a
restarted server can kill the orphans of its dead predecessor), and the cause inside an
exception group."""

from __future__ import annotations

import hashlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from agent_bridge import AgentStartError

__all__ = ["KeyedLocks", "find_exception", "owner_labels", "start_error", "start_failure_detail"]


def owner_labels(database_url: str) -> tuple[str, str]:
    """(prefix, owner): the prefix names the database (every server on it), the owner
    this process (pid and start time, so a reused pid is not mistaken for it)."""
    prefix = hashlib.sha1(database_url.encode()).hexdigest()[:12]  # noqa: S324 - a label
    return prefix, f"{prefix}:{os.getpid()}:{_process_start_time(os.getpid())}"


def _process_start_time(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "0"


def find_exception(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The first ``kind`` inside ``exc`` or its exception groups."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = find_exception(inner, kind)
            if found is not None:
                return found
    return None


def start_error(exc: BaseException) -> AgentStartError | None:
    """Why an agent did not start, from what its start raised (a spawn failure too)."""
    found = find_exception(exc, AgentStartError)
    if isinstance(found, AgentStartError):
        return found
    spawn = find_exception(exc, OSError)
    if spawn is not None:
        return AgentStartError(f"the agent could not be spawned: {spawn}")
    return None


def start_failure_detail(exc: AgentStartError) -> dict[str, Any]:
    """The ``details`` of a 502 agent_start_failed (and of the session's status message)."""
    return {
        "exitCode": exc.exit_code,
        "stderrTail": exc.stderr_tail,
        "stderr": exc.last_stderr_lines(),
        "message": exc.reason,
    }


class KeyedLocks:
    """One lock per key, forgotten once nobody holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, anyio.Lock] = {}

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock = self._locks.setdefault(key, anyio.Lock())
        try:
            async with lock:
                yield
        finally:
            if not lock.locked() and lock.statistics().tasks_waiting == 0:
                self._locks.pop(key, None)
