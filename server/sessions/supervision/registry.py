"""The registry of live sessions: which sessions have a running agent on this node, and
the locks that serialize starting, restarting and ending one session (and resuming one
run). It only keeps track: it starts nothing and never calls the supervisor, which owns
the live sessions' lives and uses it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractAsyncContextManager

from server.sessions.live.session import LiveSession
from server.sessions.supervision.processes import KeyedLocks

__all__ = ["Registry"]


class Registry(Mapping[str, LiveSession]):
    """Live sessions by session id (a read-only mapping to everyone but the supervisor)."""

    def __init__(self) -> None:
        self._live: dict[str, LiveSession] = {}
        self._locks = KeyedLocks()
        self._resuming = KeyedLocks()

    def __getitem__(self, session_id: str) -> LiveSession:
        return self._live[session_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._live)

    def __len__(self) -> int:
        return len(self._live)

    def add(self, live: LiveSession) -> None:
        self._live[live.id] = live

    def forget(self, live: LiveSession) -> None:
        """Forget ``live`` (not a newer live session of the same id)."""
        if self._live.get(live.id) is live:
            del self._live[live.id]

    def running(self, session_id: str) -> LiveSession | None:
        """The live session, unless it is on its way out."""
        live = self._live.get(session_id)
        return None if live is None or live.stopping else live

    def turn_running(self, session_id: str) -> bool:
        live = self._live.get(session_id)
        return live is not None and live.turn is not None

    def lock(self, session_id: str) -> AbstractAsyncContextManager[None]:
        """One start, restart, end or context reset of a session at a time."""
        return self._locks.hold(session_id)

    def resuming(self, run_id: str) -> AbstractAsyncContextManager[None]:
        """One resume of a run at a time: the check that it was not resumed yet and the
        commit of the run that resumes it happen under this lock, so of two racing resumes
        one is accepted and the other sees ``resumedBy``."""
        return self._resuming.hold(run_id)
