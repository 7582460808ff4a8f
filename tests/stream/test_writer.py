"""The writer on a real database: group commit (what was queued together commits in one
transaction, seqs in submit order), retry of a failed commit, one failing operation
(only its own receipts fail: the rest of its batch commits, its session is reported),
and backpressure (``wait_capacity`` waits while too many rows are queued)."""

from __future__ import annotations

import anyio
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

import server.stream.writer as writer_module
from server.stream.broker import Broker
from server.stream.writer import Draft, Writer
from store import Database
from store import messages as message_store

pytestmark = pytest.mark.anyio


@pytest.fixture
def database(store: Database) -> Database:
    return store  # tests/conftest.py's: repository r1, session s1


def text(n: int) -> Draft:
    return Draft("agent", {"type": "text", "text": f"m{n}", "partial": False})


async def stored_seqs(database: Database) -> list[int]:
    async with database.read() as db:
        rows = await message_store.list_messages(
            db, "s1", message_store.MessageFilter(), limit=None
        )
    return [m.seq for m in rows]


async def test_what_was_queued_together_commits_in_one_transaction(database: Database) -> None:
    broker = Broker()
    viewer = broker.subscribe("s1")
    writer = Writer(database, broker)
    writer.open_session("s1", 0)
    sessions: list[AsyncSession] = []

    async def note(db: AsyncSession) -> None:
        sessions.append(db)

    receipts = [writer.submit("s1", [text(n)], [note]) for n in range(1, 51)]
    assert len(viewer) == 0  # nothing is published before its commit
    async with anyio.create_task_group() as tg:
        tg.start_soon(writer.run)
        rows = [await r.wait() for r in receipts]
        await writer.drain()
    assert [row["seq"] for batch in rows for row in batch] == list(range(1, 51))
    assert len(sessions) == 50 and len({id(s) for s in sessions}) == 1  # one transaction
    assert await stored_seqs(database) == list(range(1, 51))
    assert [seq for seq, _frame in await viewer.wait_frames()] == list(range(1, 51))


async def test_a_commit_that_fails_is_retried(database: Database) -> None:
    writer = Writer(database, Broker())
    writer.open_session("s1", 0)
    attempts = 0

    async def flaky(_db: AsyncSession) -> None:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise OSError("the database went away for a moment")

    receipt = writer.submit("s1", [text(1), text(2)], [flaky])
    async with anyio.create_task_group() as tg:
        tg.start_soon(writer.run)
        await receipt.wait()
        await writer.drain()
    assert attempts == 3
    assert await stored_seqs(database) == [1, 2]  # the failed attempts were rolled back


async def test_one_failing_operation_fails_only_its_own_receipts(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 17, item 10: the batch is committed receipt by receipt once it keeps failing;
    what came before the bad receipt commits and is published, the bad one and its
    session's later ones fail, the session is reported, and its seqs go on gap-free."""
    monkeypatch.setattr(writer_module, "COMMIT_RETRIES", 2)  # each retry backs off
    broker = Broker()
    viewer = broker.subscribe("s1")
    writer = Writer(database, broker)
    reported: list[tuple[str, BaseException]] = []
    writer.on_failure = lambda sid, error: reported.append((sid, error))
    writer.open_session("s1", 0)

    async def broken(_db: AsyncSession) -> None:
        raise ValueError("a bad operation")

    good = writer.submit("s1", [text(1)])
    bad = writer.submit("s1", [text(2)], [broken])
    later = writer.submit("s1", [text(3)])  # after the bad one: its seq would leave a gap
    async with anyio.create_task_group() as tg:
        tg.start_soon(writer.run)
        assert [row["seq"] for row in await good.wait()] == [1]
        with pytest.raises(ValueError, match="a bad operation"):
            await bad.wait()
        with pytest.raises(ValueError, match="a bad operation"):
            await later.wait()
        assert await stored_seqs(database) == [1]
        assert [sid for sid, _error in reported] == ["s1"]
        after = writer.submit("s1", [text(4)])
        await after.wait()
        await writer.drain()
    assert await stored_seqs(database) == [1, 2]  # assigned again from the last stored
    assert [seq for seq, _frame in await viewer.wait_frames()] == [1, 2]


async def test_backpressure_waits_while_too_many_rows_are_queued(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_module, "MAX_PENDING_ROWS", 10)
    monkeypatch.setattr(writer_module, "MAX_BATCH_ROWS", 4)
    writer = Writer(database, Broker())
    writer.open_session("s1", 0)
    receipts = [writer.submit("s1", [text(n)]) for n in range(1, 13)]
    assert writer.over_capacity
    released: list[bool] = []

    async def producer() -> None:
        await writer.wait_capacity()
        released.append(True)

    async with anyio.create_task_group() as tg:
        tg.start_soon(producer)
        await anyio.wait_all_tasks_blocked()
        assert released == []  # still waiting: no commit has run yet
        tg.start_soon(writer.run)
        await receipts[-1].wait()
        await writer.drain()
    assert released == [True]
    assert not writer.over_capacity
    assert await stored_seqs(database) == list(range(1, 13))


async def test_a_hung_commit_fails_its_own_receipts_and_the_writer_goes_on(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 12, item 6: an attempt is bounded (COMMIT_SECONDS); one that hangs fails
    with TimeoutError and is isolated like any failing operation."""
    monkeypatch.setattr(writer_module, "COMMIT_SECONDS", 0.2)
    monkeypatch.setattr(writer_module, "COMMIT_RETRIES", 2)
    writer = Writer(database, Broker())
    reported: list[str] = []
    writer.on_failure = lambda sid, _error: reported.append(sid)
    writer.open_session("s1", 0)
    attempts = 0

    async def hang(_db: AsyncSession) -> None:
        nonlocal attempts
        attempts += 1
        await anyio.sleep_forever()

    good = writer.submit("s1", [text(1)])
    hung = writer.submit("s1", [text(2)], [hang])
    async with anyio.create_task_group() as tg:
        tg.start_soon(writer.run)
        assert [row["seq"] for row in await good.wait()] == [1]
        with pytest.raises(TimeoutError):
            await hung.wait()
        after = writer.submit("s1", [text(3)])
        await after.wait()
        await writer.drain()
    assert attempts == 3  # two batch attempts, then its own
    assert reported == ["s1"]
    assert await stored_seqs(database) == [1, 2]  # seq 2 assigned again to the next one


async def test_shutdown_completes_while_a_commit_hangs(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app's shutdown cancels the writer's task once ``drain`` ran out of time; the
    shielded attempt in flight ends at its bound and the writer stops (before the bound,
    the shield kept this task group, and so shutdown, waiting forever)."""
    monkeypatch.setattr(writer_module, "COMMIT_SECONDS", 0.2)
    writer = Writer(database, Broker())
    writer.open_session("s1", 0)
    started = anyio.Event()

    async def hang(_db: AsyncSession) -> None:
        started.set()
        await anyio.sleep_forever()

    receipt = writer.submit("s1", [text(1)], [hang])
    async with anyio.create_task_group() as tg:
        tg.start_soon(writer.run)
        await started.wait()
        tg.cancel_scope.cancel()
    assert not receipt.committed.is_set()  # abandoned, not reported as stored
    assert await stored_seqs(database) == []
