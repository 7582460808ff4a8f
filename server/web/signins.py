"""Failed sign-ins, counted per client address: each is logged with the address, and an
address with ``LIMIT`` failures in the last ``WINDOW`` seconds is refused (429) until the
oldest of them leaves the window, so guessing tokens goes at most ~10 a minute."""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable

from server.web.errors import ApiError

__all__ = ["LIMIT", "WINDOW", "SignIns"]

log = logging.getLogger("agent_sessions.security")

LIMIT = 10
WINDOW = 60.0
MAX_ADDRESSES = 10_000  # memory bound: the oldest address is forgotten first


class SignIns:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._failures: dict[str, deque[float]] = {}

    def _recent(self, address: str) -> deque[float]:
        failures = self._failures.get(address)
        if failures is None:
            return deque()
        cutoff = self.clock() - WINDOW
        while failures and failures[0] <= cutoff:
            failures.popleft()
        if not failures:
            del self._failures[address]
        return failures

    def retry_after(self, address: str) -> int | None:
        """Seconds until ``address`` may try again, or None when it may now."""
        failures = self._recent(address)
        if len(failures) < LIMIT:
            return None
        return max(1, math.ceil(failures[0] + WINDOW - self.clock()))

    def check(self, address: str) -> None:
        """Raise 429 ``too_many_failures`` (with ``Retry-After``) while ``address`` waits."""
        wait = self.retry_after(address)
        if wait is not None:
            raise ApiError(
                429,
                "too_many_failures",
                f"Too many failed sign-ins from this address; try again in {wait} s.",
                {"retryAfter": wait},
                headers={"Retry-After": str(wait)},
            )

    def failed(self, address: str, path: str, how: str) -> None:
        log.warning(
            "failed sign-in",
            extra={"event": "signin_failed", "client": address, "path": path, "how": how},
        )
        failures = self._failures.get(address)
        if failures is None:
            if len(self._failures) >= MAX_ADDRESSES:
                self._failures.pop(next(iter(self._failures)))
            failures = self._failures[address] = deque()
        failures.append(self.clock())

    def forget(self) -> None:
        """Every address's failures (tests that send many wrong tokens on purpose)."""
        self._failures.clear()
