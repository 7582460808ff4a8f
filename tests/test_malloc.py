"""server.malloc: the memory a batch frees stays in the process for the next one (glibc);
an administrator's own MALLOC_*_ variables win."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from server import malloc

GLIBC = sys.platform == "linux" and bool(os.confstr("CS_GNU_LIBC_VERSION"))

# Allocate 40 MB in 8 KB blocks (malloc's heap, not pymalloc's), free them all, and print
# how much of it the process still holds. Their list comes first and the RSS is read into
# short bytes: nothing else lies above them on the heap to keep its top from going back.
KEPT = """
import os, sys
from server import malloc
tuned = malloc.tune() if sys.argv[1] == "tune" else None
page = os.sysconf("SC_PAGE_SIZE")
statm = os.open("/proc/self/statm", os.O_RDONLY)
def rss():  # short bytes and ints only: pymalloc's, nothing on malloc's heap above the blocks
    return int(os.pread(statm, 200, 0).split()[1]) * page
blocks = [b""] * 5000
for n in range(5000):
    blocks[n] = bytes(8192)
held = rss()
del blocks
print(tuned, held - rss())
"""


def kept(mode: str, **env: str) -> tuple[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", KEPT, mode],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env},
    ).stdout.split()
    return out[0], int(out[1])


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc")
def test_freed_blocks_stay_for_the_next_batch() -> None:
    tuned, released = kept("tune")
    assert tuned == "True"
    assert released < 4 * 1024 * 1024  # the 40 MB stay
    _, released_by_default = kept("default")
    assert released_by_default > 30 * 1024 * 1024  # glibc's defaults hand them back


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc")
def test_an_administrators_malloc_variables_win() -> None:
    tuned, released = kept("tune", MALLOC_TRIM_THRESHOLD_="131072")
    assert tuned == "False"
    assert released > 30 * 1024 * 1024


# Eight threads allocate at once, each holding its blocks until all have allocated (so
# glibc would give each its own arena); malloc_stats() then lists the arenas on stderr.
ARENAS = """
import ctypes, sys, threading
from server import malloc
if sys.argv[1] == "tune":
    malloc.tune()
barrier = threading.Barrier(8)
def work():
    blocks = [bytes(8192) for _ in range(200)]
    barrier.wait()
    del blocks
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
ctypes.CDLL(None).malloc_stats()
"""


def arenas(mode: str) -> int:
    err = subprocess.run(
        [sys.executable, "-c", ARENAS, mode], capture_output=True, text=True, check=True
    ).stderr
    return sum(1 for line in err.splitlines() if line.startswith("Arena "))


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc")
def test_arenas_are_capped() -> None:
    assert arenas("tune") <= malloc.ARENAS
    assert arenas("default") > malloc.ARENAS  # glibc alone makes one per busy thread


def test_not_glibc_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert malloc.tune() is False
