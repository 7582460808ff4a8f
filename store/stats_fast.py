"""``/api/stats`` from the roll-up tables (store/rollup.py): the answer of store/stats.py's
exact queries, in time that does not grow with the number of runs.

A range is cut into whole slots of the roll-up (days, 4 h, 1 h, 15 min: the largest that
fit) and the pieces at its edges that no slot covers, which are read from the runs
themselves. Day buckets of a zone are cut along the zone's local midnights
(store.stats.zone_offsets); a zone whose offset is whole, half or quarter hours needs no raw
piece inside the range (15 min slots are kept in every filter combination since migration
0008). The whole local days are read as UTC days plus and minus the tails at their
midnights (store/stats_days.py), the range's first and last pieces slot by slot.

Sums and counts are exact. Median and p95 are exact below ``EXACT_LIMIT`` runs in the range
(the exact queries answer then); above, they are estimated from the duration histograms:
the estimate lies in the same histogram bin as the exact value, at most 19 % from it
(durations over 9.3 h count as 9.3 h).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from functools import lru_cache, partial
from operator import add
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from store import stats as exact
from store.histogram import estimate
from store.rollup import (
    DAY,
    HIST,
    RUN_STAT_COLUMNS,
    SHAPES,
    STATUS_COLUMNS,
    bin_sql,
    fence,
)
from store.stats_days import cover, one_of, signed_plan, signed_sql

__all__ = [
    "EXACT_LIMIT",
    "approx_count",
    "cover",
    "day_intervals",
    "day_label",
    "each",
    "no_jit",
    "plan",
    "run_buckets",
    "us",
]

EXACT_LIMIT = 5000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = 1_000_000

Piece = tuple[int, int, str]  # [from, to) in microseconds since the epoch, bucket label


# a query's day pieces and its labels' SQL both need them, and a year's take a while
# to find
_zone_offsets = lru_cache(maxsize=64)(exact.zone_offsets)


def us(at: datetime) -> int:
    return (at - EPOCH) // timedelta(microseconds=1)


def _at(us: int) -> datetime:
    return EPOCH + timedelta(microseconds=us)


def day_intervals(tz: str, start: datetime, end: datetime) -> list[Piece]:
    """[start, end) cut at the local midnights of ``tz`` (and at offset changes that move
    the date), each piece labelled with its local date, as store.stats' SQLite query does."""
    offsets = _zone_offsets(tz, start, end)
    cuts: set[int] = {us(start), us(end)}
    for i, (since, offset) in enumerate(offsets):
        until = offsets[i + 1][0] if i + 1 < len(offsets) else end
        cuts.add(us(since))
        local_day = (us(since) // _US + offset) // DAY + 1
        while (midnight := (local_day * DAY - offset) * _US) < us(until):
            cuts.add(midnight)
            local_day += 1
    points = sorted(c for c in cuts if us(start) <= c <= us(end))
    out: list[Piece] = []
    for a, b in zip(points, points[1:], strict=False):
        offset = next(o for since, o in reversed(offsets) if us(since) <= a)
        label = (EPOCH + timedelta(seconds=a // _US + offset)).date().isoformat()
        if out and out[-1][2] == label and out[-1][1] == a:
            out[-1] = (out[-1][0], b, label)
        else:
            out.append((a, b, label))
    return out


# -- SQL pieces ------------------------------------------------------------------------------


def _stored(dialect: str, us: int) -> str:
    at = _at(us).strftime("%Y-%m-%d %H:%M:%S.%f")
    return f"'{at}'" if dialect == "sqlite" else f"CAST('{at}+00' AS timestamptz)"


def _values(dialect: str, rows: list[str], names: tuple[str, ...]) -> str:
    body = ", ".join(f"({row})" for row in rows)
    if dialect == "sqlite":
        columns = ", ".join(f"column{i + 1} AS {name}" for i, name in enumerate(names))
        return f"(SELECT {columns} FROM (VALUES {body})) AS r"
    return f"(VALUES {body}) AS r({', '.join(names)})"


def each(
    dialect: str,
    ranges: str,
    table: str,
    condition: str,
    columns: str,
    *,
    then: str = "",
    index: str | None = None,
) -> str:
    """``ranges`` (alias r) joined to the rows of ``table`` that ``condition`` picks for
    each range, as a nested loop whatever the planner estimates: CROSS JOIN keeps SQLite's
    order (and ``index`` its choice: left alone, it built an index on ``agent_id`` and
    read every run of the agent for each range); on PostgreSQL, a LATERAL subquery that
    OFFSET 0 keeps from being pulled up. ``then`` joins more tables to ``table``."""
    if dialect == "sqlite":
        indexed = f" INDEXED BY {index}" if index else ""
        return f"{ranges} CROSS JOIN {table}{indexed} ON {condition}{then}"
    alias = table.split()[-1]
    return (
        f"{ranges} CROSS JOIN LATERAL (SELECT {columns} FROM {table}{then} "
        f"WHERE {condition} OFFSET 0) AS {alias}"
    )


async def no_jit(db: AsyncSession) -> None:
    """PostgreSQL would compile these wide statements (JIT) for seconds: not here (for
    this transaction)."""
    if db.get_bind().dialect.name == "postgresql":
        # nor start parallel workers: launching them costs more than a few thousand
        # roll-up rows
        settings = "set_config('jit', 'off', true), "
        settings += "set_config('max_parallel_workers_per_gather', '0', true)"
        await db.execute(text(f"SELECT {settings}"))


def plan(
    pieces: list[Piece], grains: Sequence[int], dialect: str
) -> tuple[dict[int, list[int]], str | None]:
    """The roll-up slots of ``pieces`` (slot starts per grain, for ``IN``/``one_of``) and
    their raw pieces (a derived table a, b, label), or None. The slots are listed rather
    than joined to a table of ranges: with a join, SQLite (given ANALYZE statistics) built
    a Bloom filter over the whole roll-up for every query, and PostgreSQL looped."""
    slots: dict[int, list[int]] = {}
    raw: list[str] = []
    for a, b, label in pieces:
        whole, rest = cover(a, b, grains)
        for g, lo, hi in whole:
            slots.setdefault(g, []).extend(range(lo, hi, g))
        raw += [f"{_stored(dialect, x)}, {_stored(dialect, y)}, '{label}'" for x, y in rest]
    return (
        slots,
        _values(dialect, raw, ("a", "b", "label")) if raw else None,
    )


def day_label(dialect: str, query: exact.StatsQuery, slot: str) -> str:
    """SQL: the local date (tz) of the instant ``slot`` (Unix seconds), as day_intervals
    labels it. A slot of the plan lies within one local day, so its start names it."""
    offsets = _zone_offsets(query.tz, query.start, query.end)
    offset = str(offsets[-1][1])
    if len(offsets) > 1:
        whens = " ".join(
            f"WHEN {slot} < {us(offsets[i][0]) // _US} THEN {offsets[i - 1][1]}"
            for i in range(1, len(offsets))
        )
        offset = f"CASE {whens} ELSE {offset} END"
    if dialect == "sqlite":
        return f"date({slot} + {offset}, 'unixepoch')"
    return f"to_char(to_timestamp({slot} + {offset}) AT TIME ZONE 'UTC', 'YYYY-MM-DD')"


_RUN_SUMS = (
    "runs",
    *STATUS_COLUMNS,
    "tool_calls",
    "tool_failures",
    "duration_total",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "cost_n",
    "cost_amount",
)


_RUN_COLUMNS = ", ".join(f"runs.{c}" for c in RUN_STAT_COLUMNS)


def _raw_runs(raw: str, kdim: str, where: str, dialect: str) -> str:
    """The runs of the raw pieces, one row each, in the columns of the roll-up's rows."""
    kval = {"status": "t.status", "agent": "t.agent_id", "repo": "t.repo_id"}.get(kdim, "''")
    columns = [
        ("label", "t.label"),
        ("kval", kval),
        ("cur_null", "CASE WHEN t.cost_currency IS NULL THEN 1 ELSE 0 END"),
        ("currency", "COALESCE(t.cost_currency, '')"),
        ("runs", "1"),
        *(
            (c, f"CASE WHEN t.status = '{c.removeprefix('n_')}' THEN 1 ELSE 0 END")
            for c in STATUS_COLUMNS
        ),
        ("tool_calls", "COALESCE(t.tool_call_count, 0)"),
        ("tool_failures", "COALESCE(t.tool_failure_count, 0)"),
        ("duration_total", "COALESCE(t.duration_ms, 0)"),
        ("input_tokens", "COALESCE(t.input_tokens, 0)"),
        ("output_tokens", "COALESCE(t.output_tokens, 0)"),
        ("cached_tokens", "COALESCE(t.cached_tokens, 0)"),
        ("cost_n", "CASE WHEN t.cost_amount IS NULL THEN 0 ELSE 1 END"),
        ("cost_amount", "COALESCE(t.cost_amount, 0)"),
        *((h, f"CASE WHEN t.bin = {i} THEN 1 ELSE 0 END") for i, h in enumerate(HIST)),
    ]
    select = ", ".join(f"{expr} AS {name}" for name, expr in columns)
    runs = each(
        dialect,
        raw,
        "runs",
        f"runs.created_at >= r.a AND runs.created_at < r.b{where}",
        _RUN_COLUMNS,
        index="ix_runs_stats",
    )
    return (
        f"SELECT {select} FROM (SELECT r.label, {_RUN_COLUMNS}, "
        f"{bin_sql('runs.duration_ms')} AS bin FROM {runs}{fence(dialect)}) AS t"
    )


async def approx_count(db: AsyncSession, table: str, column: str, query: exact.StatsQuery) -> int:
    """The runs (tool calls) of the whole days around the range, all agents and repos:
    what the exact queries would read."""
    low = us(query.start) // _US // DAY * DAY
    high = us(query.end) // _US
    stmt = text(
        f"SELECT SUM({column}) FROM {table} WHERE grain = {DAY} AND fa = '' AND fr = '' "
        + ("AND kdim = '-' " if table == "stats_runs" else "")
        + "AND slot >= :low AND slot < :high"
    )
    return int((await db.execute(stmt, {"low": low, "high": high})).scalar() or 0)


def _filters(query: exact.StatsQuery, alias: str) -> tuple[str, dict[str, Any]]:
    where, params = "", {}
    if query.agent_id:
        where += f" AND {alias}.agent_id = :agent"
        params["agent"] = query.agent_id
    if query.repo_id:
        where += f" AND {alias}.repo_id = :repo"
        params["repo"] = query.repo_id
    return where, params


async def run_buckets(
    db: AsyncSession,
    query: exact.StatsQuery,
    group_by: exact.GroupBy,
    *,
    exact_limit: int = EXACT_LIMIT,
) -> list[exact.Bucket]:
    if await approx_count(db, "stats_runs", "runs", query) <= exact_limit:
        return await exact.run_buckets(db, query, group_by)
    dialect = db.get_bind().dialect.name
    fa, fr = query.agent_id or "", query.repo_id or ""
    kdim, fixed = {"day": "-", "status": "status", "agent": "agent", "repo": "repo"}[group_by], None
    if group_by == "agent" and fa:
        kdim, fixed = "-", fa
    if group_by == "repo" and fr:
        kdim, fixed = "-", fr
    # the slots the roll-up keeps for this grouping and these filters, largest first
    shape = (int(bool(fa)), int(bool(fr)), kdim)
    grains = sorted({g for g, *rest in SHAPES if tuple(rest) == shape}, reverse=True)
    with_, parts = "", list[str]()
    if group_by == "day":
        pieces = day_intervals(query.tz, query.start, query.end)
        days = signed_plan(pieces, grains)
        if days is not None:  # the whole local days as UTC days +/- tails (store.stats_days)
            named = partial(day_label, dialect, query)
            with_, parts = signed_sql(days, (*_RUN_SUMS, *HIST), named, HIST, dialect)
            pieces = days.edges
    else:
        pieces = [(us(query.start), us(query.end), "")]
    slots, raw = plan(pieces, grains, dialect)
    where, params = _filters(query, "runs")
    columns = ", ".join(f"s.{c}" for c in (*_RUN_SUMS, *HIST))
    label = day_label(dialect, query, "s.slot") if group_by == "day" else "''"
    for grain, starts in slots.items():
        parts.append(
            f"SELECT {label} AS label, s.kval, s.cur_null, s.currency, {columns} "
            f"FROM stats_runs s WHERE s.grain = {grain} AND s.fa = :fa AND s.fr = :fr "
            f"AND s.kdim = :kdim AND s.slot {one_of(dialect, starts)}"
        )
    params |= {"fa": fa, "fr": fr, "kdim": kdim}
    if raw is not None:
        parts.append(_raw_runs(raw, kdim, where, dialect))
    # integers as bigint: PostgreSQL's SUM of bigint is numeric, far dearer to decode
    sums = ", ".join(
        f"SUM({c})" if c == "cost_amount" else f"CAST(SUM({c}) AS BIGINT)"
        for c in (*_RUN_SUMS, *HIST)
    )
    stmt = (
        f"{with_}SELECT label, kval, cur_null, currency, {sums} FROM ("
        + " UNION ALL ".join(parts)
        + ") AS u GROUP BY label, kval, cur_null, currency"
    )
    await no_jit(db)
    return _buckets((await db.execute(text(stmt), params)).all(), group_by, fixed)


def _buckets(rows: Sequence[Any], group_by: str, fixed: str | None) -> list[exact.Bucket]:
    buckets: dict[str, exact.Bucket] = {}
    costs: dict[str, dict[str, float]] = {}
    hists: dict[str, list[int]] = {}
    count = len(_RUN_SUMS)
    for label, kval, cur_null, currency, *values in rows:
        runs = int(values[0])
        if runs == 0:  # rows whose runs all changed status or went away
            continue
        key = str(label) if group_by == "day" else fixed if fixed is not None else str(kval)
        bucket = buckets.setdefault(key, exact._empty(key))  # noqa: SLF001 (one shape)
        by_status = dict(zip(STATUS_COLUMNS, (int(v) for v in values[1:7]), strict=True))
        calls, failures, total, tin, tout, tcached, cost_n = (int(v) for v in values[7:14])
        bucket["runs"] += runs
        for column, n in by_status.items():
            if n:
                status = column.removeprefix("n_")
                bucket["byStatus"][status] = bucket["byStatus"].get(status, 0) + n
        bucket["toolCalls"] += calls
        bucket["toolFailures"] += failures
        bucket["durationMs"]["total"] += total
        bucket["tokens"]["input"] += tin
        bucket["tokens"]["output"] += tout
        bucket["tokens"]["cached"] += tcached
        if not cur_null and cost_n > 0:
            per = costs.setdefault(key, {})
            per[currency] = per.get(currency, 0.0) + float(values[14])
        hist = hists.get(key)
        counts = list(values[count:])  # integers (bigint) on both databases
        hists[key] = counts if hist is None else list(map(add, hist, counts))
    out = [buckets[k] for k in sorted(buckets)]
    for bucket in out:
        by = bucket["byStatus"]
        bucket["byStatus"] = {s: by[s] for s in exact.RUN_STATUSES if s in by}
        per = costs.get(bucket["key"], {})
        bucket["cost"] = [{"currency": c, "amount": round(per[c], 6)} for c in sorted(per)]
        hist = hists[bucket["key"]]
        median, p95 = estimate(hist, 0.5, 0.95)
        bucket["durationMs"]["median"] = exact._ms(median)  # noqa: SLF001 (one rounding)
        bucket["durationMs"]["p95"] = exact._ms(p95)  # noqa: SLF001
    return out
