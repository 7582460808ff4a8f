"""Per-session fan-out of stored messages to WebSocket subscribers.

Each subscriber has a bounded queue. Publishing never waits: a subscriber whose queue is
full is marked overflowed and closed by its endpoint (4008); it catches up from the
database with its cursor. One slow browser never slows the agent or grows memory.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable

import anyio

__all__ = ["Broker", "Subscription"]

DEFAULT_QUEUE_SIZE = 8192


class Subscription:
    """One viewer's queue of ``(seq, frame)``: the frame is UTF-8 JSON text, encoded once
    and shared by every viewer."""

    def __init__(self, session_id: str, maxsize: int) -> None:
        self.session_id = session_id
        self._maxsize = maxsize
        self._frames: deque[tuple[int, bytes]] = deque()
        self._ready = anyio.Event()
        self.overflowed = False
        self.closed = False

    def put(self, seq: int, frame: bytes) -> None:
        self.put_many([(seq, frame)])

    def put_many(self, frames: list[tuple[int, bytes]]) -> None:
        """Queue ``frames`` (shared, not copied); overflow instead when they do not fit."""
        if self.overflowed or self.closed:
            return
        if len(self._frames) + len(frames) > self._maxsize:
            self.overflow()
            return
        self._frames.extend(frames)
        self._ready.set()

    def overflow(self) -> None:
        """Mark the viewer as fallen behind: its endpoint closes it with 4008."""
        self.overflowed = True
        self._frames.clear()
        self._ready.set()

    def close(self) -> None:
        self.closed = True
        self._ready.set()

    async def wait_frames(self) -> deque[tuple[int, bytes]]:
        """Wait until there is something; return every queued frame (the queue itself,
        swapped for an empty one). Nothing means the subscription overflowed or was closed."""
        while not self._frames and not (self.overflowed or self.closed):
            await self._ready.wait()
            self._ready = anyio.Event()
        if self.overflowed or self.closed:
            return deque()
        frames, self._frames = self._frames, deque()
        return frames

    def __len__(self) -> int:
        return len(self._frames)


class Broker:
    """The in-process broker: one node, one process."""

    def __init__(self, queue_size: int = DEFAULT_QUEUE_SIZE) -> None:
        self._queue_size = queue_size
        self._subs: defaultdict[str, set[Subscription]] = defaultdict(set)

    def subscribe(self, session_id: str) -> Subscription:
        sub = Subscription(session_id, self._queue_size)
        self._subs[session_id].add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        subs = self._subs.get(sub.session_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subs[sub.session_id]

    def publish(self, session_id: str, frames: Iterable[tuple[int, bytes]]) -> None:
        subs = self._subs.get(session_id)
        if not subs:
            return
        frames = frames if isinstance(frames, list) else list(frames)
        for sub in subs:
            sub.put_many(frames)

    def close_all(self, reason: str = "shutdown") -> None:
        """Close every viewer: with 1001 at shutdown, or as fallen behind (4008) so it
        reconnects with its cursor."""
        for subs in self._subs.values():
            for sub in subs:
                if reason == "behind":
                    sub.overflow()
                else:
                    sub.close()

    def has_subscribers(self, session_id: str) -> bool:
        return bool(self._subs.get(session_id))

    @property
    def viewer_count(self) -> int:
        return sum(len(subs) for subs in self._subs.values())
