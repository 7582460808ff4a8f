"""Aggregates over runs and tool calls for ``/api/stats``, computed in SQL.

Every query is one range scan of an index that holds all the columns it reads
(``ix_runs_stats``, ``ix_tool_calls_stats``, migration 0004). Medians and 95th percentiles
are continuous (linear interpolation between the two nearest ranks): PostgreSQL's
``percentile_cont``; on SQLite the same formula over ``row_number()`` windows. Day buckets
are local days of an IANA zone: PostgreSQL converts with ``timezone()``; SQLite has no zone
data, so the zone's UTC offsets over the range are computed here and applied with a CASE.
"""

from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypedDict
from zoneinfo import ZoneInfo

import msgspec
from sqlalchemy import ColumnElement, Integer, Select, and_, case, func, literal_column, select
from sqlalchemy.ext.asyncio import AsyncSession

from store.models import Run, ToolCall

__all__ = [
    "RUN_STATUSES",
    "Bucket",
    "GroupBy",
    "StatsQuery",
    "ToolStat",
    "run_buckets",
    "tool_stats",
    "zone_offsets",
]

GroupBy = Literal["day", "agent", "repo", "status", "user"]
RUN_STATUSES = ("running", "completed", "failed", "cancelled", "paused", "interrupted")


class StatsQuery(msgspec.Struct, frozen=True):
    start: datetime  # inclusive, aware
    end: datetime  # exclusive, aware
    tz: str = "UTC"
    repo_id: str | None = None
    agent_id: str | None = None


class Duration(TypedDict):
    total: int
    median: float | None
    p95: float | None


class Tokens(TypedDict):
    input: int
    output: int
    cached: int


class Cost(TypedDict):
    currency: str
    amount: float


class Bucket(TypedDict):
    key: str
    runs: int
    byStatus: dict[str, int]
    toolCalls: int
    toolFailures: int
    durationMs: Duration
    tokens: Tokens
    cost: list[Cost]


class ToolStat(TypedDict):
    toolName: str | None
    calls: int
    failures: int
    durationMs: dict[str, float | None]


def zone_offsets(tz: str, start: datetime, end: datetime) -> list[tuple[datetime, int]]:
    """[(from, offset seconds)] of ``tz`` covering [start, end): the first entry's ``from``
    is ``start``; each later one is a transition (found to the second by bisection)."""
    zone = ZoneInfo(tz)

    def offset(at: datetime) -> int:
        delta = at.astimezone(zone).utcoffset()
        return int(delta.total_seconds()) if delta is not None else 0

    out = [(start, offset(start))]
    cursor = start
    while cursor < end:
        step = min(cursor + timedelta(days=1), end)
        if offset(step) != out[-1][1]:
            low, high = cursor, step  # offset(low) == last, offset(high) differs
            while high - low > timedelta(seconds=1):
                middle = low + (high - low) / 2
                low, high = (middle, high) if offset(middle) == out[-1][1] else (low, middle)
            out.append((high.replace(microsecond=0), offset(high)))
        cursor = step
    return out


def _sql(text: str) -> ColumnElement[Any]:
    """A constant written into the SQL rather than bound: SQLite binds every ``?`` apart,
    so ``substr(created_at, ?, ?)`` in PARTITION BY and GROUP BY would be different
    expressions to it, and every window a sort of its own. Only our own constants."""
    return literal_column(text)


def _modifier(seconds: int) -> ColumnElement[Any]:
    return _sql(f"'{seconds:+d} seconds'")


def _stored(at: datetime) -> ColumnElement[Any]:
    """``at`` as SQLite stores a UtcDateTime."""
    return _sql(f"'{at.astimezone(UTC).strftime('%Y-%m-%d %H:%M:%S.%f')}'")


def _day(dialect: str, column: Any, query: StatsQuery) -> ColumnElement[Any]:
    if dialect == "postgresql":
        return func.to_char(func.timezone(query.tz, column), "YYYY-MM-DD")
    offsets = zone_offsets(query.tz, query.start, query.end)
    if offsets == [(query.start, 0)]:
        # stored as 'YYYY-MM-DD HH:MM:SS.ffffff' UTC
        return func.substr(column, _sql("1"), _sql("10"))
    if len(offsets) == 1:
        return func.date(column, _modifier(offsets[0][1]))
    # Before each transition, the offset in force until it.
    whens = [
        (column < _stored(offsets[i][0]), _modifier(offsets[i - 1][1]))
        for i in range(1, len(offsets))
    ]
    return func.date(column, case(*whens, else_=_modifier(offsets[-1][1])))


def _key(dialect: str, group_by: GroupBy, query: StatsQuery) -> Any:
    if group_by == "day":
        return _day(dialect, Run.created_at, query)
    if group_by == "user":  # who prompted the run; "" for runs of no user
        return func.coalesce(Run.user_id, "")
    return {"agent": Run.agent_id, "repo": Run.repo_id, "status": Run.status}[group_by]


def _where(stmt: Select[Any], query: StatsQuery) -> Select[Any]:
    stmt = stmt.where(Run.created_at >= query.start, Run.created_at < query.end)
    if query.repo_id:
        stmt = stmt.where(Run.repo_id == query.repo_id)
    if query.agent_id:
        stmt = stmt.where(Run.agent_id == query.agent_id)
    return stmt


def _low(p: float, count: Any) -> tuple[ColumnElement[Any], ColumnElement[Any]]:
    """(rank below the continuous percentile ``p`` of ``count`` rows, fraction past it)."""
    position = _sql(repr(p)) * (count - _sql("1"))
    low = func.cast(position, Integer)  # floor: position >= 0
    return low, position - low


def _interpolated(p: float, rank: Any, count: Any, value: Any) -> ColumnElement[Any]:
    """SUM term for the continuous percentile ``p`` over rows numbered ``rank`` (0-based)
    of ``count`` in their group: PostgreSQL's percentile_cont, written out."""
    low, fraction = _low(p, count)
    return func.sum(
        case((rank == low, value * (_sql("1") - fraction)), else_=_sql("0"))
        + case((rank == low + _sql("1"), value * fraction), else_=_sql("0"))
    )


def _near(p: float, rank: Any, count: Any) -> ColumnElement[Any]:
    low, _ = _low(p, count)
    return and_(rank >= low, rank <= low + _sql("1"))


async def _sqlite_percentiles(
    db: AsyncSession, key: Any, value: Any, base: Select[Any]
) -> dict[Any, tuple[float | None, float | None]]:
    ranked = (
        base.add_columns(
            key.label("k"),
            value.label("x"),
            (func.row_number().over(partition_by=key, order_by=value) - _sql("1")).label("rn"),
            # the same window as row_number's (one sort), counting its whole partition
            func.count().over(partition_by=key, order_by=value, rows=(None, None)).label("n"),
        )
        .where(value.is_not(None))
        .subquery()
    )
    stmt = select(
        ranked.c.k,
        _interpolated(0.5, ranked.c.rn, ranked.c.n, ranked.c.x),
        _interpolated(0.95, ranked.c.rn, ranked.c.n, ranked.c.x),
    )
    # only the (at most four) rows each percentile reads reach the GROUP BY
    near = _near(0.5, ranked.c.rn, ranked.c.n) | _near(0.95, ranked.c.rn, ranked.c.n)
    stmt = stmt.where(near).group_by(ranked.c.k)
    return {row[0]: (row[1], row[2]) for row in await db.execute(stmt)}


def _ms(value: Any) -> float | None:
    return None if value is None else round(float(value), 3)


async def _percentiles(
    db: AsyncSession, dialect: str, key: Any, query: StatsQuery
) -> dict[Any, tuple[float | None, float | None]]:
    if dialect == "postgresql":
        stmt = _where(
            select(
                key,
                func.percentile_cont(0.5).within_group(Run.duration_ms),
                func.percentile_cont(0.95).within_group(Run.duration_ms),
            ),
            query,
        ).group_by(key)
        return {row[0]: (row[1], row[2]) for row in await db.execute(stmt)}
    return await _sqlite_percentiles(db, key, Run.duration_ms, _where(select(), query))


def _empty(key: str) -> Bucket:
    return {
        "key": key,
        "runs": 0,
        "byStatus": {},
        "toolCalls": 0,
        "toolFailures": 0,
        "durationMs": {"total": 0, "median": None, "p95": None},
        "tokens": {"input": 0, "output": 0, "cached": 0},
        "cost": [],
    }


_HALF = 2**32
_TOKENS = (Run.input_tokens, Run.output_tokens, Run.cached_tokens)


def _token_sums(column: Any, wide: bool) -> list[ColumnElement[Any]]:
    """The SUM of a token column or, ``wide``, the SUMs of its quotient and remainder by
    2^32, which fewer than 2^31 runs cannot overflow (SQLite's SUM of integers raises
    "integer overflow" past 2^63-1; the parts are added up exactly here)."""
    if not wide:
        return [func.sum(column)]
    half = _sql(str(_HALF))
    # the plain operator: integer division in both databases, truncating as % does
    return [func.sum(column.op("/")(half)), func.sum(column % half)]


def _tokens(values: list[Any], wide: bool) -> list[int]:
    if not wide:
        return [int(v or 0) for v in values]
    pairs = zip(values[0::2], values[1::2], strict=True)
    return [int(high or 0) * _HALF + int(low or 0) for high, low in pairs]


async def run_buckets(
    db: AsyncSession, query: StatsQuery, group_by: GroupBy, *, wide: bool = False
) -> list[Bucket]:
    """One bucket per key present in the range, in key order. Two scans of the range: the
    sums by (key, status, currency), added up here, and the percentiles by key. ``wide``:
    token sums that do not overflow (store/stats_safe.py asks for them when one did)."""
    dialect = db.get_bind().dialect.name
    key = _key(dialect, group_by, query)
    sums = _where(
        select(
            key,
            Run.status,
            Run.cost_currency,
            func.count(),
            func.sum(Run.tool_call_count),
            func.sum(Run.tool_failure_count),
            func.sum(Run.duration_ms),
            func.sum(Run.cost_amount),
            *(term for column in _TOKENS for term in _token_sums(column, wide)),
        ),
        query,
    ).group_by(key, Run.status, Run.cost_currency)
    buckets: dict[str, Bucket] = {}
    costs: dict[str, dict[str, float]] = {}
    for k, status, currency, runs, *rest in await db.execute(sums):
        bucket = buckets.setdefault(str(k), _empty(str(k)))
        calls, failures, total = (int(v or 0) for v in rest[:3])
        tin, tout, tcached = _tokens(rest[4:], wide)
        rest = [*rest[:3], None, None, None, rest[3]]  # the cost's sum at its index, 6
        bucket["runs"] += int(runs)
        bucket["byStatus"][status] = bucket["byStatus"].get(status, 0) + int(runs)
        bucket["toolCalls"] += calls
        bucket["toolFailures"] += failures
        bucket["durationMs"]["total"] += total
        bucket["tokens"]["input"] += tin
        bucket["tokens"]["output"] += tout
        bucket["tokens"]["cached"] += tcached
        if currency is not None and rest[6] is not None:
            per = costs.setdefault(str(k), {})
            per[currency] = per.get(currency, 0.0) + float(rest[6])
    for k, (median, p95) in (await _percentiles(db, dialect, key, query)).items():
        if str(k) in buckets:
            buckets[str(k)]["durationMs"]["median"] = _ms(median)
            buckets[str(k)]["durationMs"]["p95"] = _ms(p95)
    out = [buckets[k] for k in sorted(buckets)]
    for bucket in out:
        by_status = bucket["byStatus"]
        bucket["byStatus"] = {s: by_status[s] for s in RUN_STATUSES if s in by_status}
        per = costs.get(bucket["key"], {})
        bucket["cost"] = [{"currency": c, "amount": round(per[c], 6)} for c in sorted(per)]
    return out


async def tool_stats(db: AsyncSession, query: StatsQuery, *, limit: int) -> list[ToolStat]:
    """Per tool name in the range: calls, failures (status error), median/p95 duration;
    most called first."""
    dialect = db.get_bind().dialect.name
    base = select().select_from(ToolCall)
    base = base.where(ToolCall.created_at >= query.start, ToolCall.created_at < query.end)
    if query.repo_id or query.agent_id:
        base = base.join(Run, Run.id == ToolCall.run_id)
        if query.repo_id:
            base = base.where(Run.repo_id == query.repo_id)
        if query.agent_id:
            base = base.where(Run.agent_id == query.agent_id)
    failures = func.sum(case((ToolCall.status == "error", 1), else_=0))
    columns: list[Any] = [ToolCall.tool_name, func.count(), failures]
    if dialect == "postgresql":
        columns += [
            func.percentile_cont(0.5).within_group(ToolCall.duration_ms),
            func.percentile_cont(0.95).within_group(ToolCall.duration_ms),
        ]
    stmt = (
        base.add_columns(*columns)
        .group_by(ToolCall.tool_name)
        .order_by(func.count().desc(), ToolCall.tool_name)
        .limit(limit)
    )
    rows = (await db.execute(stmt)).all()
    if dialect == "postgresql":
        pct = {row[0]: (row[3], row[4]) for row in rows}
    else:
        pct = await _sqlite_percentiles(db, ToolCall.tool_name, ToolCall.duration_ms, base)
    return [
        {
            "toolName": name,
            "calls": int(calls),
            "failures": int(fails or 0),
            "durationMs": {
                "median": _ms(pct.get(name, (None, None))[0]),
                "p95": _ms(pct.get(name, (None, None))[1]),
            },
        }
        for name, calls, fails, *_ in rows
    ]
