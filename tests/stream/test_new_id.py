"""Message ids: UUID version 7, each sorting after the one before it (within one
millisecond too, and when the clock steps back), unique under load."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

import server.stream.ids as ids_module
from server.stream.ids import new_id, new_ids


def test_ids_are_uuid_version_7_with_the_rfc_variant() -> None:
    parsed = uuid.UUID(new_id())
    assert parsed.version == 7
    assert parsed.variant == uuid.RFC_4122


def test_a_flood_of_ids_is_strictly_increasing_and_unique() -> None:
    ids = [new_id() for _ in range(200_000)]  # many per millisecond
    assert len(set(ids)) == len(ids)
    assert all(a < b for a, b in zip(ids, ids[1:], strict=False))
    assert ids == sorted(ids, key=lambda i: uuid.UUID(i).int)  # text order is number order


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ids' wall clock, standing still until a test moves it: ``clock[0]`` in ns."""
    now = [1_800_000_000_000 * 1_000_000]
    monkeypatch.setattr(ids_module, "time", SimpleNamespace(time_ns=lambda: now[0]))
    monkeypatch.setattr(ids_module, "_last_millis", 0)
    return now


def test_the_order_holds_when_the_clock_stands_still_or_steps_back(clock: list[int]) -> None:
    now = clock
    ids = [new_id() for _ in range(5000)]  # more than the 12-bit counter holds in 1 ms
    now[0] -= 10_000_000_000  # the wall clock steps back 10 s
    ids += [new_id() for _ in range(100)]
    assert all(a < b for a, b in zip(ids, ids[1:], strict=False))
    millis = [uuid.UUID(i).int >> 80 for i in ids]
    assert millis[0] == 1_800_000_000_000
    assert millis[-1] - millis[0] <= 3  # it borrowed a few milliseconds, no more


def test_batches_of_ids_are_the_same_ids_in_the_same_order() -> None:
    """``new_ids`` (a submit's batch) and ``new_id`` share the clock, counter and
    random pool: mixed, they still make version-7 ids each after the one before it."""
    ids: list[str] = []
    for size in (1, 0, 3, 700, 5000, 2):  # 5000: more than the pool and the counter hold
        ids += new_ids(size)
        ids.append(new_id())
    assert len(ids) == 1 + 3 + 700 + 5000 + 2 + 6
    assert len(set(ids)) == len(ids)
    assert all(a < b for a, b in zip(ids, ids[1:], strict=False))
    assert all(uuid.UUID(i).version == 7 and uuid.UUID(i).variant == uuid.RFC_4122 for i in ids)
    assert [str(uuid.UUID(i)) for i in ids] == ids  # the canonical text


def test_a_batch_keeps_the_order_when_the_clock_stands_still_or_steps_back(
    clock: list[int],
) -> None:
    now = clock
    ids = new_ids(5000)  # more than the 12-bit counter holds in 1 ms
    now[0] -= 10_000_000_000
    ids += new_ids(100) + [new_id()]
    assert all(a < b for a, b in zip(ids, ids[1:], strict=False))
    millis = [uuid.UUID(i).int >> 80 for i in ids]
    assert millis[0] == 1_800_000_000_000
    assert millis[-1] - millis[0] <= 3
