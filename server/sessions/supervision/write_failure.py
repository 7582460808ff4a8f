"""A session whose messages could not be stored ends in ``error`` (reason ``write_failed``).

The writer commits each receipt of a failing group commit alone, so one bad operation
fails only its own session; it reports that session here. Its agent is stopped (a running
run ends ``failed``) and the status is stored, after the messages that did commit: the
writer assigns seqs again from the last one stored, so the log keeps no gap. A session
whose ending fails to store too is reported once, not retried for ever.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable

import anyio

__all__ = ["WriteFailures"]

log = logging.getLogger("agent_sessions.sessions")

REASON = "write_failed"


class WriteFailures:
    """The writer's ``on_failure``: ends each reported session once (``run`` does) with
    ``end(session_id, status, reason, run_status)``, unless ``stopping()`` (the server
    shuts down and ends them all anyway)."""

    def __init__(
        self,
        end: Callable[[str, str, str, str], Awaitable[object]],
        stopping: Callable[[], bool],
    ) -> None:
        self._end_session = end
        self._stopping = stopping
        self._ending: set[str] = set()
        self._queue: deque[str] = deque()
        self._wake = anyio.Event()

    async def run(self) -> None:
        """End the reported sessions one after the other (in the supervisor's task group)."""
        while True:
            while self._queue:
                await self._end(self._queue.popleft())
            await self._wake.wait()
            self._wake = anyio.Event()

    def __call__(self, session_id: str, error: BaseException) -> None:
        log.error(
            "messages of a session could not be stored (%s); the session ends in error",
            type(error).__name__,
            extra={"event": REASON, "session_id": session_id},
        )
        if session_id in self._ending or self._stopping():
            return
        self._ending.add(session_id)
        self._queue.append(session_id)
        self._wake.set()

    async def _end(self, session_id: str) -> None:
        try:
            await self._end_session(session_id, "error", REASON, "failed")
        except Exception:  # noqa: BLE001 - already ended, or the store is gone: logged
            log.exception("could not end a session after a failed write")
        finally:
            self._ending.discard(session_id)
