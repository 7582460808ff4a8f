"""Message ids: UUID version 7, made on the event loop's thread."""

from __future__ import annotations

import os
import time

__all__ = ["new_id"]

_VERSION_7 = (0x7 << 76) | (0x2 << 62)  # version and variant bits
_random = bytearray()  # used from the event loop's thread only
_last_millis = 0  # the timestamp of the last id, and its 12-bit counter (rand_a)
_counter = 0


def new_id() -> str:
    """A UUID version 7 string (RFC 9562): a 48-bit Unix time in milliseconds, then 74
    random bits. Messages are the one table that grows without end; ids in time order
    keep its primary-key index appending at its right edge, where random (version 4)
    ids touched a random leaf page per row: as the table grew, each batch of a flood
    dirtied thousands of pages (WAL writes, cache misses; the store thread's CPU per
    row doubled over 160 000 rows). Random bits come from the OS 4 KiB at a time.

    Monotonic (RFC 9562, 6.2 method 1): within one millisecond the 12 bits after the
    timestamp count up from a random start below 2048; when they run out, or the clock
    steps back, the timestamp moves on from the last one, so each id sorts after the one
    before it."""
    global _random, _last_millis, _counter
    if not _random:
        _random = bytearray(os.urandom(4096))
    bits = int.from_bytes(_random[-10:])
    del _random[-10:]
    millis = time.time_ns() // 1_000_000
    if millis > _last_millis:
        _last_millis, _counter = millis, bits >> 62 & 0x7FF
    else:
        _counter += 1
        if _counter > 0xFFF:
            _last_millis, _counter = _last_millis + 1, 0
        millis = _last_millis
    n = millis << 80 | _counter << 64 | (bits & (1 << 62) - 1) | _VERSION_7
    h = f"{n:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
