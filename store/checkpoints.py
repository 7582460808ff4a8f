"""WAL checkpoints off the commit path: a thread of their own for SQLite's hot writer.

SQLite runs a checkpoint inside the ``COMMIT`` that takes the WAL past 1 000 pages (its
``wal_autocheckpoint``): it copies the WAL's pages into the database file and fsyncs
both. On the hot writer that stalled the commit pipeline every few hundred commits for
several milliseconds, and the updates queued behind it made p99 latency at 1 000
updates/s (4 000 updates, `scripts/bench-ab`, 4 rounds): 10.0 ms with SQLite's own
checkpoints, 1.5 ms with none on the commit path. The hot writer's connections turn
``wal_autocheckpoint`` off and ask this thread for a ``PASSIVE`` checkpoint (it never
waits for readers or writers; writers keep appending to the WAL while it copies) every
``EVERY_COMMITS`` commits or ``EVERY_ROWS`` rows.

A checkpoint lets the next transaction write the WAL from its start again only when it
copied every frame and that transaction begins after it: a writer that appends while
the checkpoint copies keeps the WAL growing (a flood of ~5 KB tool updates: 420 MB of
WAL for 30 000 updates, every frame on a new page of the file: page allocation, zeroing
and ext4 block reservation per page; ``perf`` of the server had ``pwrite64`` at 52 % of
the writer thread's samples, two thirds of it in ``ext4_da_write_begin``). So the
writer's thread (never the event loop's: ``SqliteHotWriter`` commits small batches there
without waiting) waits for a checkpoint in progress before it begins a transaction
(``wait_idle``), up to ``WAIT_SECONDS``; its queue meanwhile grows into a bigger batch.
"""

from __future__ import annotations

import logging
import sqlite3
import threading

log = logging.getLogger(__name__)

__all__ = ["EVERY_COMMITS", "EVERY_ROWS", "WAIT_SECONDS", "Checkpointer"]

# About SQLite's default of 1 000 WAL pages: a text update's commit at a paced rate
# writes a few pages, a flood's batch of ~5 KB tool updates several per row.
EVERY_COMMITS = 200
EVERY_ROWS = 2000
# A checkpoint of a flood's WAL (~2 000 rows of ~5 KB tool updates) takes tens of
# milliseconds; one that takes longer than this is not waited for further.
WAIT_SECONDS = 2.0


class Checkpointer:
    """``wrote(rows)`` after each commit; every so often it wakes the thread (started on
    first need, one connection of its own) for a PASSIVE checkpoint; ``wait_idle`` waits
    for one requested or in progress. ``close`` stops it after the checkpoint in
    progress, if any."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._commits = self._rows = 0
        self._wake = threading.Event()
        self._stop = False
        self._thread: threading.Thread | None = None
        self._idle = threading.Event()  # clear from a request to the end of its checkpoint
        self._idle.set()
        self.ran = threading.Event()  # set after each checkpoint (for tests)

    def wrote(self, rows: int) -> None:
        self._commits += 1
        self._rows += rows
        if self._commits >= EVERY_COMMITS or self._rows >= EVERY_ROWS:
            self._commits = self._rows = 0
            self.request()

    def wait_idle(self) -> bool:
        """Wait (up to ``WAIT_SECONDS``) for the checkpoint requested or in progress, if
        any; False when it is still running."""
        return self._idle.wait(WAIT_SECONDS)

    def request(self) -> None:
        self._idle.clear()
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="sqlite-checkpoints", daemon=True
            )
            self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        except BaseException:
            self._idle.set()  # no checkpoints: nothing to wait for
            raise
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stop:
                    return
                try:
                    self._checkpoint(conn)
                except sqlite3.Error:  # the next request tries again; the WAL only grows
                    log.exception("WAL checkpoint failed")
                if not self._wake.is_set():  # else another request came in meanwhile
                    self._idle.set()
                self.ran.set()
        finally:
            self._idle.set()
            conn.close()

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def close(self, timeout: float = 30.0) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stop = True
            self._wake.set()
            thread.join(timeout)
