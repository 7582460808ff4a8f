"""SQLite's hot writer commits a small batch (paced updates) on the event loop's thread
when the database's write lock is free, and a big one (a flood's) on the writer's
thread; a small batch whose lock another connection holds never makes the loop wait:
it goes to the writer's thread, which waits for the lock as before."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from anyio import create_task_group, fail_after, to_thread, wait_all_tasks_blocked
from msgspec.structs import replace
from sqlalchemy.engine import make_url

from server.stream.broker import Broker
from server.stream.writer import Draft, Writer
from store import Database, checkpoints, engine
from store.engine import SQLITE_BUSY_TIMEOUT_MS
from store.hot_writes import INLINE_ROWS, HotBatch, SqliteHotWriter

pytestmark = pytest.mark.anyio


@pytest.fixture
def sqlite_store(store: Database) -> Iterator[Database]:
    if store.dialect != "sqlite":
        pytest.skip("SQLite's hot writer")
    yield store


def batch(store: Database, rows: int, after: int = 0) -> HotBatch:
    """A batch of ``rows`` messages of session s1 (seqs from ``after`` + 1), as the
    writer builds it."""
    writer = Writer(store, Broker())
    writer.open_session("s1", after)
    chunk = {"type": "text", "text": "x", "partial": True}  # no final text: no index row
    receipt = writer.submit("s1", [Draft("agent", chunk)] * rows)
    hot = writer._hot_batch([receipt])
    assert hot is not None
    return hot


@dataclass
class Hot:
    """A hot writer on the test's database file, and the thread each of its
    transactions was written on."""

    path: str
    writer: SqliteHotWriter
    threads: list[int]


@pytest.fixture
async def hot(sqlite_store: Database) -> AsyncIterator[Hot]:
    path = make_url(sqlite_store.url).database
    assert path is not None
    writer = SqliteHotWriter(path)
    threads: list[int] = []
    write = writer._write

    def recording(conn: sqlite3.Connection, batch: HotBatch) -> None:
        threads.append(threading.get_ident())
        write(conn, batch)

    writer._write = recording  # type: ignore[method-assign]
    try:
        yield Hot(path, writer, threads)
    finally:
        await writer.close()


def count(path: str) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT count(*) FROM messages").fetchone()[0])


async def test_a_small_batch_on_the_loop_thread_a_big_one_on_the_writer_thread(
    sqlite_store: Database, hot: Hot
) -> None:
    small, big = batch(sqlite_store, INLINE_ROWS), batch(sqlite_store, INLINE_ROWS + 1)
    big.messages[:] = [
        replace(row, id=f"b{n}", seq=row.seq + INLINE_ROWS) for n, row in enumerate(big.messages)
    ]
    await hot.writer.commit(small, None)
    await hot.writer.commit(big, None)
    assert hot.threads[0] == threading.get_ident()
    assert hot.threads[1] != threading.get_ident()
    assert count(hot.path) == 2 * INLINE_ROWS + 1


async def test_a_small_batch_whose_lock_is_held_waits_on_the_writer_thread(
    sqlite_store: Database, hot: Hot
) -> None:
    holder = sqlite3.connect(hot.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another connection's write transaction
    try:
        # far below the busy timeout: a loop thread that waited for the lock would be
        # stuck past it and the scope would time out
        with fail_after(SQLITE_BUSY_TIMEOUT_MS / 1000 / 3):
            async with create_task_group() as tg:
                tg.start_soon(hot.writer.commit, batch(sqlite_store, 1), None)
                await wait_all_tasks_blocked()  # the commit waits on the writer's thread
                assert hot.threads == []  # the loop did not write (nor wait: we are here)
                holder.execute("COMMIT")
        assert len(hot.threads) == 1 and hot.threads[0] != threading.get_ident()
        assert count(hot.path) == 1
        busy = hot.writer._connection().execute("PRAGMA busy_timeout").fetchone()[0]
        assert busy == SQLITE_BUSY_TIMEOUT_MS  # the thread connection waits for locks
    finally:
        holder.close()


def in_database_file(path: str) -> int:
    """Messages in the database file itself, not counting the WAL's (0 while the
    migrations that made the table are in the WAL too)."""
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        tables = conn.execute("SELECT name FROM sqlite_master WHERE name = 'messages'")
        if tables.fetchone() is None:
            return 0
        return int(conn.execute("SELECT count(*) FROM messages").fetchone()[0])
    finally:
        conn.close()


async def test_checkpoints_run_on_a_thread_of_their_own(
    sqlite_store: Database, hot: Hot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither the loop's nor the writer's connection checkpoints on COMMIT (a checkpoint
    copies the WAL into the database and fsyncs it: milliseconds the commit pipeline
    would wait); after EVERY_COMMITS commits the checkpointer's thread copies it."""
    monkeypatch.setattr(checkpoints, "EVERY_COMMITS", 3)
    for n in range(3):
        small = batch(sqlite_store, 1)
        small.messages[:] = [replace(small.messages[0], id=f"m{n}", seq=n + 1)]
        await hot.writer.commit(small, None)
        assert in_database_file(hot.path) == 0  # in the WAL only
    ran = hot.writer._checkpoints.ran
    assert await to_thread.run_sync(ran.wait, 30)
    assert in_database_file(hot.path) == 3  # copied in
    for conn in (hot.writer._inline_connection(), hot.writer._connection()):
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    assert hot.threads == [threading.get_ident()] * 3  # all three inline
    assert count(hot.path) == 3


async def test_the_wal_is_cut_back_when_a_checkpoint_lets_it_restart(
    sqlite_store: Database, hot: Hot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With checkpoints off the commit path a flood's WAL grows past the checkpoints; once
    one has copied everything, the next commit starts the WAL over and cuts the file back
    to ``journal_size_limit`` instead of leaving it at the flood's size for good."""
    limit = 64 * 1024
    monkeypatch.setattr(engine, "SQLITE_WAL_LIMIT_BYTES", limit)
    monkeypatch.setattr(checkpoints, "EVERY_COMMITS", 1)
    flood = batch(sqlite_store, 3000)
    await hot.writer.commit(flood, None)
    ran = hot.writer._checkpoints.ran
    assert await to_thread.run_sync(ran.wait, 30)  # everything copied, no reader in the way
    wal = Path(f"{hot.path}-wal")
    assert wal.stat().st_size > 4 * limit
    late = batch(sqlite_store, 1)
    late.messages[:] = [replace(late.messages[0], id="late", seq=3001)]
    await hot.writer.commit(late, None)
    # cut back, then the new commit's pages: its row, and the search index's pages that the
    # full-text triggers write for a final text (tens of KB, not the flood's 4 x limit)
    assert wal.stat().st_size <= 2 * limit
    assert count(hot.path) == 3001


async def test_a_flood_the_checkpoints_never_catch_up_with_keeps_the_wal_capped(
    sqlite_store: Database, hot: Hot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Here the checkpoint thread is never asked (in a flood it copies while commits keep
    landing, and never finishes): past WAL_CAP_BYTES the writer copies the WAL in itself
    between two commits, and the next one starts it over, so the file stays near the cap
    however long the flood lasts."""
    limit, cap, rows, commits = 64 * 1024, 512 * 1024, 200, 60
    monkeypatch.setattr(engine, "SQLITE_WAL_LIMIT_BYTES", limit)
    monkeypatch.setattr(checkpoints, "WAL_CAP_BYTES", cap)
    monkeypatch.setattr(checkpoints, "EVERY_COMMITS", 10**9)
    monkeypatch.setattr(checkpoints, "EVERY_ROWS", 10**9)
    wal = Path(f"{hot.path}-wal")
    sizes = []
    for n in range(commits):
        await to_thread.run_sync(hot.writer.commit_sync, batch(sqlite_store, rows, n * rows))
        sizes.append(wal.stat().st_size)
    # uncapped, it grows with every commit (~10 MB here); capped, the cap and about one
    # commit's pages (the first one's include the migrations')
    assert max(sizes) <= cap + 4 * max(sizes[0], limit)
    assert count(hot.path) == rows * commits


def test_a_checkpoint_left_behind_is_tried_again_unasked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint that could not copy every frame (here a reader's snapshot holds the
    last ones back; in a flood, commits landing while it copies) runs again after
    RETRY_SECONDS without another request, so the WAL is copied in full soon after the
    writes stop, and the next commit starts it over, cut back to journal_size_limit."""
    monkeypatch.setattr(checkpoints, "RETRY_SECONDS", 0.05)
    path = str(tmp_path / "db.sqlite")
    writer = sqlite3.connect(path, isolation_level=None)
    reader = sqlite3.connect(path, isolation_level=None)
    checkpointer = checkpoints.Checkpointer(path)
    wal = Path(f"{path}-wal")
    try:
        for pragma in ("journal_mode=WAL", "wal_autocheckpoint=0", "journal_size_limit=0"):
            writer.execute(f"PRAGMA {pragma}")
        writer.execute("CREATE TABLE messages (x)")
        writer.executemany("INSERT INTO messages VALUES (?)", [("a" * 1000,)] * 50)
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM messages").fetchone() == (50,)
        writer.executemany("INSERT INTO messages VALUES (?)", [("b" * 1000,)] * 50)
        checkpointer.request()
        assert checkpointer.ran.wait(30)  # copied up to the reader's snapshot only
        reader.execute("COMMIT")
        pages, size = (
            writer.execute(f"PRAGMA {n}").fetchone()[0] for n in ("page_count", "page_size")
        )
        for _ in range(100):  # each wait is for a checkpoint the thread runs unasked
            checkpointer.ran.clear()
            if Path(path).stat().st_size == pages * size:  # every page copied in
                break
            assert checkpointer.ran.wait(10)
        assert Path(path).stat().st_size == pages * size
        grown = wal.stat().st_size
        writer.execute("INSERT INTO messages VALUES ('c')")  # starts the WAL over
        assert wal.stat().st_size < grown // 4
        assert writer.execute("SELECT count(*) FROM messages").fetchone() == (101,)
    finally:
        checkpointer.close()
        reader.close()
        writer.close()
