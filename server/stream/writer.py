"""The one write path for messages: group commit, then publish.

Messages submitted together (and while a commit is in flight) are written in one
transaction, with any state changes that belong to them; subscribers see a message only
after its transaction committed. ``submit`` assigns each session's ``seq`` in call order.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from server import metrics
from server.settings import CLEANUP_SECONDS
from server.stream.broker import Broker
from server.stream.clock import now_and_stamp
from server.stream.frames import stored_frames
from server.stream.ids import new_id, new_ids
from server.stream.receipt import Draft, Receipt
from store import Database
from store import messages as message_store
from store import sessions as session_store
from store.hot_batch import HOT_OPS, HotBatch
from store.hot_writes import hot_writer_for
from store.message_row import MessageRow, message_dict
from store.operations import WriteOp
from store.search import is_final_text

__all__ = ["Draft", "Receipt", "Writer", "new_id"]

log = logging.getLogger("agent_sessions.writer")

MAX_BATCH_ROWS = 2000
MAX_PENDING_ROWS = 20000
COMMIT_RETRIES = 5
# One attempt runs through cancellation (shielded: what is being stored gets stored) but
# not forever: an attempt a hung database or operation holds longer fails with
# TimeoutError, which the retry and then the per-receipt isolation handle like any error.
COMMIT_SECONDS = CLEANUP_SECONDS
# While busy, a commit starts at most once per interval; an idle writer commits at once
# and a backlog of a full batch never waits. Through SQLAlchemy a transaction costs much
# CPU (its binds plus a dozen aiosqlite thread hops), so at a steady rate one commit per
# message would take most of a core; spacing them groups messages for a little latency.
COMMIT_INTERVAL = 0.005
# On the hot path a commit is cheap (one thread hand-off, executemany, COMMIT): natural
# group commit, at most one in flight, no spacing, which roughly halves latency at a
# steady rate for some more CPU per update. bench/results/notes.md has the figures.
HOT_COMMIT_INTERVAL = 0.0


class Writer:
    def __init__(
        self,
        database: Database,
        broker: Broker,
        notify: Callable[[AsyncSession, dict[str, tuple[int, int]]], Awaitable[None]] | None = None,
        announce: Callable[[dict[str, tuple[int, int]]], tuple[str, list[str]]] | None = None,
    ) -> None:
        self._db = database
        self._broker = broker
        self._notify = notify
        # The group commit's own connection and thread (None: SQLAlchemy). With a cluster
        # NOTIFY it needs ``announce``: the channel and payloads ``notify`` would send.
        self._announce = announce
        hot = hot_writer_for(database.url)
        self._hot = None if notify is not None and announce is None else hot
        self._queue: deque[Receipt] = deque()
        self._pending_rows = 0
        self._wake = anyio.Event()
        self._space = anyio.Event()
        self._seq: dict[str, int] = {}
        self._closing = False
        self._stopped = anyio.Event()
        # Set by the supervisor: a session whose messages could not be stored (it ends in
        # error).
        self.on_failure: Callable[[str, BaseException], None] | None = None

    # -- seq bookkeeping --------------------------------------------------------------

    def open_session(self, session_id: str, last_seq: int) -> None:
        """Start assigning seqs after ``last_seq`` (the highest ever used)."""
        self._seq[session_id] = max(last_seq, self._seq.get(session_id, 0))

    def last_seq(self, session_id: str) -> int:
        return self._seq.get(session_id, 0)

    # -- submitting -------------------------------------------------------------------

    def submit(
        self, session_id: str | None, drafts: Sequence[Draft] = (), ops: Sequence[WriteOp] = ()
    ) -> Receipt:
        """Queue ``drafts`` (and ``ops`` run in the same transaction, after the insert).
        Never waits; call ``wait_capacity`` before a flood of submits."""
        rows: list[MessageRow] = []
        now = None
        if drafts:
            assert session_id is not None and session_id in self._seq, "open_session first"
            now, stamp = now_and_stamp()  # one text per submit, for the row and the frame
            seq = self._seq[session_id]
            dumps = orjson.dumps
            fresh = iter(new_ids(sum(1 for draft in drafts if draft.id is None)))
            for draft in drafts:
                seq += 1
                content, raw = draft.content, draft.raw
                rows.append(
                    MessageRow(
                        id=draft.id or next(fresh),
                        session_id=session_id,
                        seq=seq,
                        run_id=draft.run_id,
                        step_number=draft.step_number,
                        role=draft.role,
                        type=content.get("type", "update"),
                        partial=bool(content.get("partial", False)),
                        dropped=False,
                        content=dumps(content).decode(),
                        raw=None if raw is None else dumps(raw).decode(),
                        created_at=stamp,
                    )
                )
            self._seq[session_id] = seq
        receipt = Receipt(session_id, rows, tuple(ops), now)
        self._queue.append(receipt)
        self._pending_rows += len(rows)
        self._wake.set()
        return receipt

    @property
    def over_capacity(self) -> bool:
        """True while ``wait_capacity`` would wait."""
        return self._pending_rows >= MAX_PENDING_ROWS and not self._closing

    async def wait_capacity(self) -> None:
        """Backpressure: wait while too many rows are queued."""
        while self._pending_rows >= MAX_PENDING_ROWS and not self._closing:
            await self._space.wait()
            self._space = anyio.Event()

    # -- the commit loop --------------------------------------------------------------

    def _take_batch(self) -> list[Receipt]:
        """The receipts for one transaction, in order. With a hot path, a batch is either
        all hot (only ops it knows) or all not: a receipt that needs SQLAlchemy does not
        take the flood queued ahead of it onto the slow path (SQLAlchemy's binds for a
        full batch of queued tool updates cost several times the hot path's)."""
        batch: list[Receipt] = []
        rows = 0
        queue, split = self._queue, self._hot is not None
        hot = True
        while queue and (rows < MAX_BATCH_ROWS or not batch):
            item = queue[0]
            if split:
                item_hot = _hot_ops(item)
                if batch and item_hot is not hot:
                    break
                hot = item_hot
            queue.popleft()
            batch.append(item)
            rows += len(item.rows)
        self._pending_rows -= rows
        return batch

    async def _commit(self, batch: list[Receipt]) -> None:
        hot = self._hot_batch(batch)
        if hot is not None:
            assert self._hot is not None
            if not (hot.messages or hot.tools):
                return  # nothing to write (a receipt only waited for what came before)
            announce = None
            if self._announce is not None and hot.messages:
                announce = self._announce(_spans(hot.messages))
            await self._hot.commit(hot, announce)
            return
        rows = [_encoded(row, item.created_at) for item in batch for row in item.rows]
        last: dict[str, tuple[int, Any]] = {}
        first: dict[str, int] = {}
        for row in rows:
            first.setdefault(row["session_id"], row["seq"])
            last[row["session_id"]] = (row["seq"], row["created_at"])
        async with self._db.write() as db, db.begin():
            await message_store.insert_messages(db, rows)
            for session_id, (seq, when) in last.items():
                await session_store.note_activity(db, session_id, seq, when)
            for item in batch:
                for op in item.ops:
                    await op(db)
            if self._notify is not None and last:
                await self._notify(db, {sid: (first[sid], seq) for sid, (seq, _) in last.items()})

    def _hot_batch(self, batch: list[Receipt]) -> HotBatch | None:
        """The batch for the hot path, or None when it must go through SQLAlchemy (no hot
        path for this database, a cluster NOTIFY, or an op the hot path does not know)."""
        if self._hot is None:
            return None
        hot = HotBatch()
        messages, activity, tools, stamps = hot.messages, hot.activity, hot.tools, hot.stamps
        for item in batch:
            if not _hot_ops(item):
                return None
            tools.extend(item.ops)  # type: ignore[arg-type]  # _hot_ops checked their types
            rows = item.rows
            if rows:
                messages.extend(rows)
                # Picked out here, on the event loop: a Python loop over the rows on the
                # writer's thread would hold the GIL between its sqlite3 calls, which the
                # event loop then waits for (+20 % CPU per chunk in a text flood).
                hot.finals.extend(
                    {"session_id": row.session_id, "seq": row.seq}
                    for row in rows
                    if is_final_text(row.type, row.partial, row.dropped)
                )
                last = rows[-1]
                activity[last.session_id] = (last.seq, last.created_at)
                if item.created_at is not None:
                    stamps[last.created_at] = item.created_at
        return hot

    async def run(self) -> None:
        """The commit loop; runs for the lifetime of the app."""
        try:
            await self._loop()
        finally:
            if self._hot is not None:
                with anyio.CancelScope(shield=True):
                    await self._hot.close()
            self._stopped.set()

    async def _loop(self) -> None:
        interval = COMMIT_INTERVAL if self._hot is None else HOT_COMMIT_INTERVAL
        started = -interval
        while True:
            if not self._queue:
                if self._closing:
                    return
                await self._wake.wait()
                self._wake = anyio.Event()
                continue
            wait = started + interval - time.monotonic()
            if wait > 0 and not self._closing and self._pending_rows < MAX_BATCH_ROWS:
                await anyio.sleep(wait)
            started = time.monotonic()
            batch = self._take_batch()
            self._space.set()
            await self._commit_with_retry(batch)

    async def _commit_with_retry(self, batch: list[Receipt]) -> None:
        started = time.perf_counter()
        error: BaseException | None = None
        for attempt in range(COMMIT_RETRIES):
            try:
                await self._commit_bounded(batch)
                error = None
                break
            except Exception as exc:  # noqa: BLE001 - retried, then isolated
                error = exc
                log.exception("commit failed (attempt %d)", attempt + 1)
                await anyio.sleep(0.05 * 2**attempt)
        failed: dict[int, BaseException] = {}
        if error is not None:
            failed = await self._commit_alone(batch)
        rows = [row for item in batch if id(item) not in failed for row in item.rows]
        metrics.observe_commit(time.perf_counter() - started, len(rows))
        if rows:
            metrics.count_messages(row.type for row in rows)
            for session_id, frames in stored_frames(rows).items():
                self._broker.publish(session_id, frames)
        for item in batch:
            item._set_committed(failed.get(id(item)))
        if failed:
            self._drop_failed_sessions([item for item in batch if id(item) in failed])

    async def _commit_bounded(self, batch: list[Receipt]) -> None:
        with anyio.fail_after(COMMIT_SECONDS, shield=True):
            await self._commit(batch)

    async def _commit_alone(self, batch: list[Receipt]) -> dict[int, BaseException]:
        """The batch keeps failing: commit each receipt in a transaction of its own, in
        order, so one bad operation fails only its own session. Once a receipt of a
        session failed, its later receipts fail too (their seqs would leave a gap).
        Returns the failed receipts (by id) with their errors."""
        failed: dict[int, BaseException] = {}
        broken: dict[str | None, BaseException] = {}
        for item in batch:
            if item.session_id is not None and item.session_id in broken:
                failed[id(item)] = broken[item.session_id]
                continue
            # Shutting down (the writer's task cancelled): stop between receipts, or a hung
            # database would hold shutdown for one bounded attempt per receipt.
            await anyio.lowlevel.checkpoint_if_cancelled()
            try:
                await self._commit_bounded([item])
            except Exception as exc:  # noqa: BLE001 - reported to its waiter and session
                log.exception(
                    "commit of one session's messages failed", extra={"session_id": item.session_id}
                )
                failed[id(item)] = exc
                if item.session_id is not None:
                    broken[item.session_id] = exc
        return failed

    def _drop_failed_sessions(self, failed: list[Receipt]) -> None:
        """For each session with a failed receipt: fail its receipts still queued (their
        seqs follow the lost ones), assign seqs again from the last one stored, and report
        the session (``on_failure``), whose status the domain then sets to ``error``."""
        errors: dict[str, BaseException] = {}
        first_lost: dict[str, int] = {}
        for item in failed:
            if item.session_id is None or item.error is None:
                continue
            errors.setdefault(item.session_id, item.error)
            if item.rows:
                first_lost.setdefault(item.session_id, item.rows[0].seq)
        if not errors:
            return
        kept: deque[Receipt] = deque()
        for item in self._queue:
            if item.session_id in errors:
                self._pending_rows -= len(item.rows)
                if item.rows:
                    first_lost.setdefault(item.session_id, item.rows[0].seq)
                item._set_committed(errors[item.session_id])
            else:
                kept.append(item)
        self._queue = kept
        self._space.set()
        for session_id, error in errors.items():
            if session_id in first_lost:
                self._seq[session_id] = first_lost[session_id] - 1
            if self.on_failure is not None:
                self.on_failure(session_id, error)

    async def drain(self) -> None:
        """Commit everything queued, then let ``run`` return."""
        self._closing = True
        self._wake.set()
        await self._stopped.wait()


def _hot_ops(item: Receipt) -> bool:
    """Whether the hot path knows every op of ``item`` (tool-call rows; or it has none)."""
    return all(isinstance(op, HOT_OPS) for op in item.ops)


def _spans(rows: list[MessageRow]) -> dict[str, tuple[int, int]]:
    """Per session: the first and last seq among ``rows`` (in seq order)."""
    spans: dict[str, tuple[int, int]] = {}
    for row in rows:
        first = spans.get(row.session_id)
        spans[row.session_id] = (row.seq if first is None else first[0], row.seq)
    return spans


def _encoded(row: MessageRow, created_at: datetime | None) -> dict[str, Any]:
    """A row for SQLAlchemy's insert: its JSON text (encoded once at submit, so the dicts
    are freed at once: fewer live objects, less cyclic GC) as Fragments, which the
    engine's serializer (orjson) copies verbatim."""
    assert created_at is not None
    values = message_dict(row, created_at)
    raw = values["raw"]
    values["content"] = orjson.Fragment(values["content"])
    values["raw"] = None if raw is None else orjson.Fragment(raw)
    return values
