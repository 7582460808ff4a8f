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
from typing import TYPE_CHECKING

import anyio

from server.sessions.open_runs import fail_open_runs

if TYPE_CHECKING:
    from server.sessions.hub import Hub

__all__ = ["WriteFailures"]

log = logging.getLogger("agent_sessions.sessions")

REASON = "write_failed"
WHY = "the run's messages could not be stored"


class WriteFailures:
    """The writer's ``on_failure``: ends each reported session once (``run`` does)."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self._ending: set[str] = set()
        self._queue: deque[str] = deque()
        self._wake = anyio.Event()

    async def run(self) -> None:
        """End the reported sessions one after the other (in the hub's task group)."""
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
        if session_id in self._ending or self.hub.shutting_down:
            return
        self._ending.add(session_id)
        self._queue.append(session_id)
        self._wake.set()

    async def _end(self, session_id: str) -> None:
        try:
            try:
                await self.hub.end_session(session_id, "error", REASON, run_status="failed")
            finally:  # a run whose end was the write that failed is still ``running``
                await fail_open_runs(self.hub.services, session_id, WHY)
        except Exception:  # noqa: BLE001 - already ended, or the store is gone: logged
            log.exception("could not end a session after a failed write")
        finally:
            self._ending.discard(session_id)
