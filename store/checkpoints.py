"""WAL checkpoints off the commit path: a thread of their own for SQLite's hot writer.

SQLite runs a checkpoint inside the ``COMMIT`` that takes the WAL past 1 000 pages (its
``wal_autocheckpoint``): it copies the WAL's pages into the database file and fsyncs
both. On the hot writer that stalled the commit pipeline every few hundred commits for
several milliseconds, and the updates queued behind it set the p99 latency at a paced
rate (bench/results/notes.md). The hot writer's connections turn ``wal_autocheckpoint``
off and ask this thread for a ``PASSIVE`` checkpoint (it never waits for readers or
writers; writers keep appending to the WAL while it copies) every ``EVERY_COMMITS``
commits or ``EVERY_ROWS`` rows.

Under a flood the thread copies while commits keep landing, so the WAL is never copied
in full and never starts over: it grew for as long as the flood lasted. Once its file
passes ``WAL_CAP_BYTES`` the writer copies it in itself, between two of its commits
(``cap``), and the next commit starts it over.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading

log = logging.getLogger(__name__)

__all__ = ["EVERY_COMMITS", "EVERY_ROWS", "RETRY_SECONDS", "WAL_CAP_BYTES", "Checkpointer"]

# About SQLite's default of 1 000 WAL pages: a text update's commit at a paced rate
# writes a few pages, a flood's batch of ~5 KB tool updates several per row.
EVERY_COMMITS = 200
EVERY_ROWS = 2000
# A checkpoint that could not copy every frame (commits landed while it copied, or a
# reader still needed them) is tried again after this long, requested or not: once a
# flood ends, the WAL is copied in full within about this time, and the next commit
# starts it over and cuts the file back to ``journal_size_limit`` (store/engine.py)
# instead of leaving it at the flood's size until 200 more commits ask for a checkpoint.
RETRY_SECONDS = 1.0
# The most the WAL file may grow to in a flood (8 × journal_size_limit): past it the
# writer's commits wait while what the thread has not copied yet is copied in (the
# bench's tool-update flood stays under it).
WAL_CAP_BYTES = 512 * 1024 * 1024


class Checkpointer:
    """``wrote(rows)`` after each commit; every so often it wakes the thread (started on
    first need, one connection of its own) for a PASSIVE checkpoint. ``close`` stops it
    after the checkpoint in progress, if any."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._wal = f"{path}-wal"
        self._commits = self._rows = 0
        self._wake = threading.Event()
        self._stop = False
        self._thread: threading.Thread | None = None
        self.ran = threading.Event()  # set after each checkpoint (for tests)

    def wrote(self, rows: int) -> None:
        self._commits += 1
        self._rows += rows
        if self._commits >= EVERY_COMMITS or self._rows >= EVERY_ROWS:
            self._commits = self._rows = 0
            self.request()

    def cap(self, conn: sqlite3.Connection) -> None:
        """On the writer's thread, between its commits: once the WAL file has grown past
        WAL_CAP_BYTES, copy it in on ``conn`` (the hot writer's commits wait that long),
        so that the next commit starts the WAL over and cuts the file back to
        journal_size_limit. A reader's old snapshot may hold frames back: then
        the next commit tries again."""
        try:
            size = os.stat(self._wal).st_size
        except OSError:
            return
        if size > WAL_CAP_BYTES:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()

    def request(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="sqlite-checkpoints", daemon=True
            )
            self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        behind = False  # the last checkpoint left frames in the WAL
        try:
            while True:
                self._wake.wait(RETRY_SECONDS if behind else None)
                self._wake.clear()
                if self._stop:
                    return
                try:
                    (_, frames, copied) = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    behind = copied < frames
                except sqlite3.Error:  # the next request tries again; the WAL only grows
                    log.exception("WAL checkpoint failed")
                self.ran.set()
        finally:
            conn.close()

    def close(self, timeout: float = 30.0) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stop = True
            self._wake.set()
            thread.join(timeout)
