"""Open connections that end when their credential does: a WebSocket registers the keys
of its actor (``token:<id>``, ``login:<id>``, ``user:<id>``) with a callback, and a
revocation of any of them calls it at once, on this node and (through the cluster's
NOTIFY) on every other."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable

__all__ = ["Revocations"]

log = logging.getLogger("agent_sessions.security")

Publish = Callable[[list[str]], Awaitable[None]]


class Revocations:
    def __init__(self) -> None:
        self._watchers: dict[str, set[Callable[[], None]]] = defaultdict(set)
        self.publish: Publish | None = None  # the cluster's, once it runs clustered

    def watch(self, keys: Iterable[str], on_revoked: Callable[[], None]) -> Callable[[], None]:
        """Call ``on_revoked`` when any of ``keys`` is revoked; returns the unwatch."""
        keys = tuple(keys)
        for key in keys:
            self._watchers[key].add(on_revoked)

        def unwatch() -> None:
            for key in keys:
                watchers = self._watchers.get(key)
                if watchers is not None:
                    watchers.discard(on_revoked)
                    if not watchers:
                        del self._watchers[key]

        return unwatch

    def watched(self) -> list[str]:
        """Every key an open connection waits on."""
        return list(self._watchers)

    def revoked_here(self, keys: Iterable[str]) -> int:
        """Call the watchers of ``keys`` on this node; how many were called."""
        called: set[Callable[[], None]] = set()
        for key in keys:
            called |= self._watchers.get(key, set())
        for callback in called:
            callback()
        return len(called)

    async def revoke(self, keys: list[str]) -> None:
        """Here at once, then on the other nodes (a failed publish is logged: the next
        request with the credential is refused by the database anyway)."""
        self.revoked_here(keys)
        if self.publish is not None:
            try:
                await self.publish(keys)
            except Exception:
                log.exception("publishing a revocation to the other nodes failed")
