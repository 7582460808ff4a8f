"""What the writer queues and hands back: drafts in, receipts out."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import anyio
import msgspec

from store.message_row import MessageRow, message_dict
from store.operations import WriteOp

__all__ = ["Draft", "Receipt"]


class Draft(msgspec.Struct):
    """A message to store: everything but its id, seq and timestamp."""

    role: str
    content: dict[str, Any]
    raw: dict[str, Any] | None = None
    run_id: str | None = None
    step_number: int | None = None
    id: str | None = None


class Receipt:
    """What ``submit`` hands back: the stored rows (ids and seqs assigned), and an event
    set once they are committed. It is also the queue entry (with the ops). The event is
    made on first use: most receipts (one per agent update) are never waited on."""

    __slots__ = ("_done", "_event", "created_at", "error", "ops", "rows", "session_id")

    def __init__(
        self,
        session_id: str | None,
        rows: list[MessageRow],
        ops: Sequence[WriteOp],
        created_at: datetime | None = None,
    ) -> None:
        self.session_id = session_id
        self.rows = rows  # their JSON encoded once, at submit
        self.ops = ops
        self.created_at = created_at
        self.error: BaseException | None = None
        self._done = False
        self._event: anyio.Event | None = None

    @property
    def committed(self) -> anyio.Event:
        if self._event is None:
            self._event = anyio.Event()
            if self._done:
                self._event.set()
        return self._event

    def _set_committed(self, error: BaseException | None) -> None:
        self.error = error
        self._done = True
        if self._event is not None:
            self._event.set()

    async def wait(self) -> list[dict[str, Any]]:
        """The stored rows (column name → value, content and raw as JSON text)."""
        if not self._done:
            await self.committed.wait()
        if self.error is not None:
            raise self.error
        created_at = self.created_at  # None: no rows
        return [] if created_at is None else [message_dict(r, created_at) for r in self.rows]
