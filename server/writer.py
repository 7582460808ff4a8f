"""The one write path for messages: group commit, then publish.

Messages submitted together (and while a commit is in flight) are written in one
transaction, with any state changes that belong to them; subscribers see a message only
after its transaction committed. ``submit`` assigns each session's ``seq`` in call order.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import orjson
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from server import metrics
from server.broker import Broker
from server.views import message_view
from store import Database, SessionRecord, utcnow
from store import messages as message_store

__all__ = ["Draft", "Receipt", "Writer"]

log = logging.getLogger("agent_sessions.writer")

MAX_BATCH_ROWS = 2000
MAX_PENDING_ROWS = 20000
COMMIT_RETRIES = 5

Op = Callable[[AsyncSession], Awaitable[None]]


@dataclass
class Draft:
    """A message to store: everything but its id, seq and timestamp."""

    role: str
    content: dict[str, Any]
    raw: dict[str, Any] | None = None
    run_id: str | None = None
    step_number: int | None = None
    id: str | None = None


@dataclass
class Receipt:
    """What ``submit`` hands back: the stored rows (ids and seqs assigned), and an event
    set once they are committed."""

    rows: list[dict[str, Any]]
    committed: anyio.Event = field(default_factory=anyio.Event)
    error: BaseException | None = None

    async def wait(self) -> list[dict[str, Any]]:
        await self.committed.wait()
        if self.error is not None:
            raise self.error
        return self.rows


@dataclass
class _Item:
    session_id: str | None
    rows: list[dict[str, Any]]
    ops: list[Op]
    receipt: Receipt


class Writer:
    def __init__(
        self, database: Database, broker: Broker,
        notify: Callable[[AsyncSession, dict[str, tuple[int, int]]], Awaitable[None]] | None = None,
    ) -> None:
        self._db = database
        self._broker = broker
        self._notify = notify
        self._queue: deque[_Item] = deque()
        self._pending_rows = 0
        self._wake = anyio.Event()
        self._space = anyio.Event()
        self._seq: dict[str, int] = {}
        self._closing = False
        self._stopped = anyio.Event()

    # -- seq bookkeeping --------------------------------------------------------------

    def open_session(self, session_id: str, last_seq: int) -> None:
        """Start assigning seqs after ``last_seq`` (the highest ever used)."""
        self._seq[session_id] = max(last_seq, self._seq.get(session_id, 0))

    def last_seq(self, session_id: str) -> int:
        return self._seq.get(session_id, 0)

    # -- submitting -------------------------------------------------------------------

    def submit(
        self, session_id: str | None, drafts: Sequence[Draft] = (), ops: Sequence[Op] = ()
    ) -> Receipt:
        """Queue ``drafts`` (and ``ops`` run in the same transaction, after the insert).
        Never waits; call ``wait_capacity`` before a flood of submits."""
        rows: list[dict[str, Any]] = []
        if drafts:
            assert session_id is not None and session_id in self._seq, "open_session first"
            now = utcnow()
            seq = self._seq[session_id]
            for draft in drafts:
                seq += 1
                content = draft.content
                rows.append(
                    {
                        "id": draft.id or str(uuid.uuid4()),
                        "session_id": session_id,
                        "seq": seq,
                        "run_id": draft.run_id,
                        "step_number": draft.step_number,
                        "role": draft.role,
                        "type": content.get("type", "update"),
                        "partial": bool(content.get("partial", False)),
                        "dropped": False,
                        "content": content,
                        "raw": draft.raw,
                        "created_at": now,
                    }
                )
            self._seq[session_id] = seq
        receipt = Receipt(rows)
        self._queue.append(_Item(session_id, rows, list(ops), receipt))
        self._pending_rows += len(rows)
        self._wake.set()
        return receipt

    async def wait_capacity(self) -> None:
        """Backpressure: wait while too many rows are queued."""
        while self._pending_rows >= MAX_PENDING_ROWS and not self._closing:
            await self._space.wait()
            self._space = anyio.Event()

    # -- the commit loop --------------------------------------------------------------

    def _take_batch(self) -> list[_Item]:
        batch: list[_Item] = []
        rows = 0
        while self._queue and (rows < MAX_BATCH_ROWS or not batch):
            item = self._queue.popleft()
            batch.append(item)
            rows += len(item.rows)
        self._pending_rows -= rows
        return batch

    async def _commit(self, batch: list[_Item]) -> None:
        rows = [row for item in batch for row in item.rows]
        last: dict[str, tuple[int, Any]] = {}
        first: dict[str, int] = {}
        for row in rows:
            first.setdefault(row["session_id"], row["seq"])
            last[row["session_id"]] = (row["seq"], row["created_at"])
        async with self._db.write() as db, db.begin():
            await message_store.insert_messages(db, rows)
            for session_id, (seq, when) in last.items():
                await db.execute(
                    update(SessionRecord)
                    .where(SessionRecord.id == session_id)
                    .values(last_seq=seq, updated_at=when, last_activity_at=when)
                )
            for item in batch:
                for op in item.ops:
                    await op(db)
            if self._notify is not None and last:
                await self._notify(db, {sid: (first[sid], seq) for sid, (seq, _) in last.items()})

    async def run(self) -> None:
        """The commit loop; runs for the lifetime of the app."""
        try:
            await self._loop()
        finally:
            self._stopped.set()

    async def _loop(self) -> None:
        while True:
            if not self._queue:
                if self._closing:
                    return
                await self._wake.wait()
                self._wake = anyio.Event()
                continue
            batch = self._take_batch()
            self._space.set()
            await self._commit_with_retry(batch)

    async def _commit_with_retry(self, batch: list[_Item]) -> None:
        started = time.perf_counter()
        error: BaseException | None = None
        for attempt in range(COMMIT_RETRIES):
            try:
                with anyio.CancelScope(shield=True):
                    await self._commit(batch)
                error = None
                break
            except Exception as exc:  # noqa: BLE001 - retried, then reported to waiters
                error = exc
                log.exception("commit failed (attempt %d)", attempt + 1)
                await anyio.sleep(0.05 * 2**attempt)
        metrics.observe_commit(time.perf_counter() - started, sum(len(i.rows) for i in batch))
        for item in batch:
            if error is None and item.rows:
                metrics.count_messages(item.rows)
                self._broker.publish(item.session_id or "", _frames(item.rows))
            item.receipt.error = error
            item.receipt.committed.set()

    async def drain(self) -> None:
        """Commit everything queued, then let ``run`` return."""
        self._closing = True
        self._wake.set()
        await self._stopped.wait()


def _frames(rows: list[dict[str, Any]]) -> list[tuple[int, str]]:
    return [
        (row["seq"], orjson.dumps({"type": "message", "message": message_view(row)}).decode())
        for row in rows
    ]
