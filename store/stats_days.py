"""Day buckets of a zone from the statistics roll-up with fewer rows: each whole local day
as whole UTC days plus and minus the "tail" of a UTC day at its midnights.

A local day [m1, m2) whose midnights are not UTC midnights takes 9 to 12 roll-up slots
(4 h, 1 h, 15 min) when cut into slots that fit inside it (store.stats_fast.plan). Written
instead as the UTC days that start in it plus ``[m1, c1)`` minus ``[m2, c2)`` (``c`` the
UTC midnight after ``m``: the "ceil" scheme) or the UTC days that end in it minus
``[f1, m1)`` plus ``[f2, m2)`` (``f`` the UTC midnight before: "floor"), it takes one day
row and the slots of each midnight's tail, which are summed once (a materialised CTE) and
added to the day after the midnight and taken from the day before. Asia/Kolkata's day
(18:30 -> 18:30 UTC) then costs 1 + 4 + 2 rows instead of 12, New York's 1 + 2 + 2
instead of 9. Sums stay exact (integers; cost is a float sum either way).

The range's first and last pieces (cut by ``from``/``to``, not by midnights) are planned
as before; so are ranges whose tails would need raw runs or would share a UTC day.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

import msgspec

from store.rollup import DAY

__all__ = ["DayPlan", "cover", "one_of", "signed_plan", "signed_sql"]

_US = 1_000_000
Piece = tuple[int, int, str]  # [from, to) in microseconds since the epoch, bucket label


class DayPlan(msgspec.Struct):
    """The slots of the range's whole local days: DAY slot -> label, the tail slots by
    grain, and per tail (its UTC day, Unix seconds) the labels it is added to or taken
    from; ``edges`` are the pieces left to the ordinary plan. Every label is the local
    date of an instant SQL knows (store.stats_fast.day_label): a day slot's first second
    (ceil) or last (floor); a tail's UTC day's first second for the day before its
    midnight, its last second for the day after."""

    ceil: bool = True
    days: dict[int, str] = msgspec.field(default_factory=dict)
    tails: dict[int, list[int]] = msgspec.field(default_factory=dict)
    plus: dict[int, str] = msgspec.field(default_factory=dict)
    minus: dict[int, str] = msgspec.field(default_factory=dict)
    edges: list[Piece] = msgspec.field(default_factory=list)


def cover(
    a: int, b: int, grains: Sequence[int]
) -> tuple[list[tuple[int, int, int]], list[tuple[int, int]]]:
    """[a, b) (microseconds) as whole slots ``(grain, first slot, end)`` in seconds, the
    largest grains first, and the raw pieces no slot covers."""
    if a >= b:
        return [], []
    if not grains:
        return [], [(a, b)]
    size = grains[0] * _US
    low, high = -(-a // size) * size, b // size * size
    if low >= high:
        return cover(a, b, grains[1:])
    left_slots, left_raw = cover(a, low, grains[1:])
    right_slots, right_raw = cover(high, b, grains[1:])
    slots = [*left_slots, (grains[0], low // _US, high // _US), *right_slots]
    return slots, [*left_raw, *right_raw]


def _slots(a: int, b: int, grains: Sequence[int]) -> list[tuple[int, int]] | None:
    """[a, b) (seconds, within one UTC day) as (grain, slot) of the grains below a day,
    None if some of it is not whole slots."""
    day = a - a % DAY
    relative = _day_slots(a - day, b - day, tuple(g for g in grains if g < DAY))
    return None if relative is None else [(g, day + s) for g, s in relative]


@lru_cache(maxsize=256)
def _day_slots(a: int, b: int, grains: tuple[int, ...]) -> tuple[tuple[int, int], ...] | None:
    """_slots of [a, b) seconds from a UTC midnight (the same each day of a zone)."""
    whole, raw = cover(a * _US, b * _US, grains)
    if raw:
        return None
    return tuple((g, s) for g, low, high in whole for s in range(low, high, g))


@lru_cache(maxsize=256)
def _piece_cost(a: int, length: int, grains: tuple[int, ...]) -> int:
    """The slots (and raw pieces, 50 each) of an ordinary plan of [a, a + length) us,
    ``a`` from a UTC midnight."""
    whole, raw = cover(a, a + length, grains)
    return sum((high - low) // g for g, low, high in whole) + 50 * len(raw)


def _scheme(pieces: list[Piece], grains: Sequence[int], ceil: bool) -> tuple[int, DayPlan] | None:
    plan = DayPlan(edges=[pieces[0], pieces[-1]], ceil=ceil)
    cost = 0
    # the midnights between whole pieces: pieces[i][0] for i in 1 .. n - 1
    for i in range(1, len(pieces)):
        x = pieces[i][0]
        if x % _US or (x // _US) % min(grains):
            return None
        x //= _US
        day = x - x % DAY
        if day == x:
            continue  # a UTC midnight: no tail
        if day in plan.plus or day in plan.minus:
            return None  # two midnights in one UTC day: their tails would overlap
        tail = _slots(x, day + DAY, grains) if ceil else _slots(day, x, grains)
        if tail is None:
            return None
        if tail:
            after = pieces[i][2] if i < len(pieces) - 1 else None  # the day starting at x
            before = pieces[i - 1][2] if i > 1 else None  # the day ending at x
            # SQL names them by the local date of the tail's UTC day's first and last second
            if before is not None and not pieces[i - 1][0] <= day * _US:
                return None
            if after is not None and not (day + DAY) * _US <= pieces[i][1]:
                return None
            added, taken = (after, before) if ceil else (before, after)
            if added is not None:
                plan.plus[day] = added
            if taken is not None:
                plan.minus[day] = taken
            cost += len(tail) + (added is not None) + (taken is not None)
            for g, s in tail:
                plan.tails.setdefault(g, []).append(s)
    for a, b, label in pieces[1:-1]:
        a //= _US
        b //= _US
        low = -(-a // DAY) * DAY if ceil else a - a % DAY
        high = -(-b // DAY) * DAY if ceil else b - b % DAY
        for slot in range(low, high, DAY):
            plan.days[slot] = label
            cost += 1
    return cost, plan


def _ordinary_cost(pieces: list[Piece], grains: Sequence[int]) -> int:
    day, key = DAY * _US, tuple(grains)
    return sum(_piece_cost(a % day, b - a, key) for a, b, _ in pieces[1:-1])


def signed_plan(pieces: list[Piece], grains: Sequence[int]) -> DayPlan | None:
    """The cheaper of the ceil and floor schemes for ``pieces`` (store.stats_fast's day
    pieces), or None when planning every piece as before costs no more rows."""
    if len(pieces) < 3 or not grains or grains[0] != DAY:
        return None
    best: tuple[int, DayPlan] | None = None
    for ceil in (True, False):
        found = _scheme(pieces, grains, ceil)
        if found is not None and (best is None or found[0] < best[0]):
            best = found
    if best is None or best[0] >= _ordinary_cost(pieces, grains):
        return None
    return best[1]


def one_of(dialect: str, values: Iterable[int]) -> str:
    """SQL: ``IN`` a list of integers; on PostgreSQL ``= ANY`` of one array constant
    (parsing and planning a year's thousands of listed constants was a large part of
    the query's time)."""
    joined = ",".join(map(str, values))
    if dialect == "postgresql":
        return f"= ANY(CAST('{{{joined}}}' AS bigint[]))"
    return f"IN ({joined})"


def signed_sql(
    plan: DayPlan,
    columns: Sequence[str],
    label: Callable[[str], str],
    hist: Sequence[str],
    dialect: str,
) -> tuple[str, list[str]]:
    """SQL of ``plan``: a WITH clause (the tails summed per UTC day, or '') and the parts
    (label, kval, cur_null, currency, ``columns``) for the outer query's UNION ALL.
    ``label(instant)`` is the SQL of an instant's local date; the statement's parameters
    :fa, :fr and :kdim pick the roll-up rows. ``hist`` columns stay 32-bit integers."""
    picked = "s.fa = :fa AND s.fr = :fr AND s.kdim = :kdim"
    key = "s.kval, s.cur_null, s.currency"
    listed = ", ".join(f"s.{c}" for c in columns)
    parts = []
    if plan.days:
        parts.append(
            f"SELECT {label('s.slot' if plan.ceil else f's.slot + {DAY - 1}')} AS label, {key}, "
            f"{listed} FROM stats_runs s "
            f"WHERE s.grain = {DAY} AND {picked} AND s.slot {one_of(dialect, plan.days)}"
        )
    if not plan.tails:
        return "", parts
    slots = " UNION ALL ".join(
        f"SELECT s.slot - s.slot % {DAY} AS day, {key}, {listed} FROM stats_runs s "
        f"WHERE s.grain = {grain} AND {picked} AND s.slot {one_of(dialect, starts)}"
        for grain, starts in sorted(plan.tails.items())
    )
    sums = ", ".join(
        f"CAST(SUM(v.{c}) AS INTEGER) AS {c}" if c in hist else f"SUM(v.{c}) AS {c}"
        for c in columns
    )
    with_ = (
        f"WITH t AS MATERIALIZED (SELECT v.day, v.kval, v.cur_null, v.currency, {sums} "
        f"FROM ({slots}) AS v GROUP BY v.day, v.kval, v.cur_null, v.currency) "
    )
    first, last = label("t.day"), label(f"t.day + {DAY - 1}")
    for labels, sign, name in ((plan.plus, "", last), (plan.minus, "-", first)):
        if labels:
            values = ", ".join(f"{sign}t.{c}" for c in columns)
            name = name if plan.ceil else (first if name == last else last)
            parts.append(
                f"SELECT {name} AS label, t.kval, t.cur_null, t.currency, "
                f"{values} FROM t WHERE t.day {one_of(dialect, labels)}"
            )
    return with_, parts
