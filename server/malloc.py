"""glibc's malloc, told to keep the memory a flood frees for the next batch.

A flood's batch is thousands of rows, frames and their texts (a ~5 KB tool update makes
~30 KB of them), built, sent and freed together. With glibc's defaults the free at the
top of the heap goes back to the system (above 128 KB, or twice the largest block mapped
on its own so far), and the next batch faults every page in again: building a batch's
frames on memory just handed back cost several times what it cost on memory kept
(bench/results/notes.md). ``tune`` raises the trim threshold to
``KEEP_BYTES`` and lets blocks up to ``MMAP_BYTES`` come from the heap (glibc's own
maximum), so that a flood runs on memory it already has. The price is memory kept after
a flood: at most ``KEEP_BYTES`` free at the top of each of malloc's arenas. glibc would
make up to eight arenas per core (one per thread that allocates while another holds one:
the event loop, the writer's thread, every aiosqlite connection's thread, the worker
threads), so ``tune`` also caps them at ``ARENAS``: what a load leaves behind is then
bounded by ``ARENAS`` times ``KEEP_BYTES`` plus SQLite's caches (docs/memory.md has the
30-minute soak that shows it level off).

An administrator's own ``MALLOC_*_`` variables (glibc's tunables by environment) win:
then nothing is changed. Not glibc (musl, macOS): nothing to do.
"""

from __future__ import annotations

import os
import sys

__all__ = ["ARENAS", "KEEP_BYTES", "MMAP_BYTES", "tune"]

ARENAS = 2
KEEP_BYTES = 64 * 1024 * 1024
MMAP_BYTES = 32 * 1024 * 1024
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
_OWN_VARIABLES = (
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "MALLOC_ARENA_MAX",
)


def tune() -> bool:
    """Set the thresholds for this process; True when they were set."""
    if sys.platform != "linux" or any(name in os.environ for name in _OWN_VARIABLES):
        return False
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return False
    except (ValueError, OSError):
        return False
    import ctypes

    mallopt = ctypes.CDLL(None).mallopt
    return bool(
        mallopt(_M_ARENA_MAX, ARENAS)
        and mallopt(_M_TRIM_THRESHOLD, KEEP_BYTES)
        and mallopt(_M_MMAP_THRESHOLD, MMAP_BYTES)
    )
