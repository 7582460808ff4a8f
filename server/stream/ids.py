"""Message ids: UUID version 7, made on the event loop's thread."""

from __future__ import annotations

import os
import time

__all__ = ["new_id", "new_ids"]

# rand_b's first hex digit carries the RFC variant (0b10xx): a random hex digit -> one
# of 8, 9, a, b.
_VARIANT = {f"{n:x}": "89ab"[n & 3] for n in range(16)}
_RANDOM_BYTES = 4096
_random = ""  # hex digits from the OS; used from the event loop's thread only
_taken = 0  # how many of them are used
_last_millis = 0  # the timestamp of the last id, and its 12-bit counter (rand_a)
_counter = 0
_prefix = ""  # the id's text up to rand_a, for _last_millis


def _refill() -> None:
    global _random, _taken
    _random, _taken = os.urandom(_RANDOM_BYTES).hex(), 0


def new_id() -> str:
    """A UUID version 7 string (RFC 9562): a 48-bit Unix time in milliseconds, then 74
    random bits. Messages are the one table that grows without end; ids in time order
    keep its primary-key index appending at its right edge, where random (version 4)
    ids touched a random leaf page per row: as the table grew, each batch of a flood
    dirtied thousands of pages (WAL writes, cache misses; the store thread's CPU per
    row doubled over 160 000 rows). Random bits come from the OS 4 KiB at a time, as
    hex text sliced per id.

    Monotonic (RFC 9562, 6.2 method 1): within one millisecond the 12 bits after the
    timestamp count up from a random start below 2048; when they run out, or the clock
    steps back, the timestamp moves on from the last one, so each id sorts after the one
    before it. The text up to those 12 bits is made once per millisecond (a flood makes
    dozens of ids in one), the rest is sliced from the random hex: no big-integer work
    per id."""
    global _taken, _last_millis, _counter
    if _taken + 19 > len(_random):
        _refill()
    r, start = _random, _taken
    _taken = start + 19  # 16 hex digits of rand_b, 3 for a new millisecond's counter
    millis = time.time_ns() // 1_000_000
    if millis > _last_millis:
        _counter = int(r[start + 16 : start + 19], 16) & 0x7FF
        _set_millis(millis)
    else:
        _counter += 1
        if _counter > 0xFFF:
            _counter = 0
            _set_millis(_last_millis + 1)
    variant, rand_b = _VARIANT[r[start]], r[start + 1 : start + 16]
    return f"{_prefix}{_counter:03x}-{variant}{rand_b[:3]}-{rand_b[3:]}"


def new_ids(count: int) -> list[str]:
    """``count`` ids, the ones ``count`` calls of ``new_id`` would make (in order, each
    after the one before it), with one clock read: a flood's submit takes a batch of
    ids at once, cheaper per id than one call each."""
    global _random, _taken, _counter
    if count <= 0:
        return []
    if _taken + 19 * count > len(_random):
        _random, _taken = os.urandom(max(_RANDOM_BYTES, 10 * count)).hex(), 0
    r, start = _random, _taken
    _taken = start + 19 * count
    millis = time.time_ns() // 1_000_000
    counter = _counter
    if millis > _last_millis:
        counter = (int(r[start + 16 : start + 19], 16) & 0x7FF) - 1  # the first id: +1
        _set_millis(millis)
    prefix, variant, ids = _prefix, _VARIANT, []
    for at in range(start, start + 19 * count, 19):
        counter += 1
        if counter > 0xFFF:
            counter = 0
            _set_millis(_last_millis + 1)
            prefix = _prefix
        ids.append(
            f"{prefix}{counter:03x}-{variant[r[at]]}{r[at + 1 : at + 4]}-{r[at + 4 : at + 16]}"
        )
    _counter = counter
    return ids


def _set_millis(millis: int) -> None:
    global _last_millis, _prefix
    h = f"{millis:012x}"
    _last_millis, _prefix = millis, f"{h[:8]}-{h[8:12]}-7"
