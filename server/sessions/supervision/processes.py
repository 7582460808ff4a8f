"""What the supervisor knows about processes: which server owns an agent process (so a
restarted server can kill the orphans of its dead predecessor), and the cause inside an
exception group."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from agent_bridge import AgentStartError, OrphanSweeper, owner_marker, tracked_children
from agent_bridge.jsontypes import JsonObject

__all__ = [
    "KeyedLocks",
    "find_exception",
    "process_owner",
    "start_error",
    "start_failure_detail",
]


def process_owner(database_url: str, node_id: str) -> tuple[str, OrphanSweeper]:
    """The owner marker of this server process, and the sweeper of what agents of its
    ended sessions leave re-parented to it. The marker names the database (a hash), node
    ``node_id``, and this process (pid and start time, so a reused pid is not mistaken
    for it): a restarted node kills only what a dead process of its own left
    (agent_bridge.orphans). The sweeper never touches asyncio's own children."""
    database_hash = hashlib.sha1(database_url.encode()).hexdigest()[:12]  # noqa: S324 - a label
    owner = owner_marker(database_hash, node_id)
    return owner, OrphanSweeper(owner, tracked_children)


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


def start_failure_detail(exc: AgentStartError) -> JsonObject:
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
