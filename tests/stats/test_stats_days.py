"""store/stats_days.py plans the whole local days of a range as UTC days plus and minus the
tails at their midnights, with fewer roll-up rows than slots that fit inside each day (the
answers are checked against the exact queries in test_rollup.py, every zone there)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from store.rollup import SHAPES
from store.stats_days import signed_plan
from store.stats_fast import day_intervals

END = datetime(2026, 11, 24, 12, 7, tzinfo=UTC)
GRAINS = sorted({g for g, *rest in SHAPES if tuple(rest) == (1, 0, "-")}, reverse=True)


def rows_per_day(tz: str) -> float:
    pieces = day_intervals(tz, END - timedelta(days=365), END)
    plan = signed_plan(pieces, GRAINS)
    assert plan is not None
    tails = sum(len(slots) for slots in plan.tails.values())
    return (len(plan.days) + tails + len(plan.plus) + len(plan.minus)) / (len(pieces) - 2)


@pytest.mark.parametrize(
    ("tz", "most"),
    [
        ("Asia/Kolkata", 7),  # 1 UTC day + a tail of 4 slots (18:30 -> 24:00) + 2 uses
        ("Asia/Kathmandu", 8),  # the tail 18:15 -> 24:00: 5 slots
        ("America/New_York", 5),  # floor: 00:00 -> 05:00 (04:00 in summer): 1 or 2 slots
        ("Australia/Lord_Howe", 8),  # +10:30 / +11: floor, 00:00 -> 13:30 (13:00)
    ],
)
def test_a_year_of_local_days_reads_few_rows_a_day(tz: str, most: int) -> None:
    assert rows_per_day(tz) <= most + 0.1  # + the tails at the range's two ends


def test_utc_days_are_planned_as_before() -> None:
    assert signed_plan(day_intervals("UTC", END - timedelta(days=30), END), GRAINS) is None


def test_a_range_of_two_pieces_is_planned_as_before() -> None:
    pieces = day_intervals("Asia/Kolkata", END - timedelta(hours=30), END)
    assert len(pieces) == 2
    assert signed_plan(pieces, GRAINS) is None


def test_tails_that_need_raw_runs_are_planned_as_before() -> None:
    """Kolkata's offset in 1900 was +05:21:10: its midnights are no 15 min slot's edge."""
    start = datetime(1900, 1, 1, tzinfo=UTC)
    pieces = day_intervals("Asia/Kolkata", start, start + timedelta(days=10))
    assert signed_plan(pieces, GRAINS) is None
