"""``GET /api/stats``'s buckets, whatever the runs hold: sums exact, never an error.

- A sum past 2^63-1 (tokens of runs stored before their numbers were checked, or very
  many runs) makes SQLite's SUM raise and PostgreSQL's cast to BIGINT fail, and SQLite's
  roll-up rows hold it as a REAL: when a query raised so, or a token total reaches
  2^53, the buckets are computed again from the runs with sums that cannot overflow
  (``store.stats.run_buckets(wide=True)``), exact, only slower.
- A negative token count (stored before counts were checked) cannot make a total
  negative: totals are at least 0, as the schema says.
- A running run's tool calls count in its bucket as they are made (its run row gets its
  tool counts when it ends): as in the history and ``/api/stats/tools``.
"""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import case, func, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

from store import stats as exact
from store import stats_fast
from store.engine import Database
from store.models import Run, ToolCall

__all__ = ["run_buckets"]

_OVERFLOW = ("integer overflow", "out of range")
# A total this large may have been added up in floating point (SQLite turns an integer
# "+" that overflows into a REAL: the roll-up's upsert does) and cast back: recomputed.
EXACT_FLOAT = 2**53


def _overflowed(error: DBAPIError) -> bool:
    text = str(error.orig).lower()
    return any(marker in text for marker in _OVERFLOW)


async def run_buckets(
    database: Database, query: exact.StatsQuery, group_by: exact.GroupBy
) -> list[exact.Bucket]:
    try:
        async with database.read() as db:
            limit = stats_fast.EXACT_LIMIT
            buckets = await stats_fast.run_buckets(db, query, group_by, exact_limit=limit)
            await _running_tools(db, query, group_by, buckets)
        wide = any(max(_totals(b)) >= EXACT_FLOAT for b in buckets)
    except DBAPIError as error:
        if not _overflowed(error):
            raise
        wide = True
    if wide:
        async with database.read() as db:  # a fresh transaction (PostgreSQL aborted its)
            buckets = await exact.run_buckets(db, query, group_by, wide=True)
            await _running_tools(db, query, group_by, buckets)
    for bucket in buckets:
        tokens = bucket["tokens"]
        tokens["input"], tokens["output"], tokens["cached"] = (max(0, v) for v in _totals(bucket))
    return buckets


def _totals(bucket: exact.Bucket) -> tuple[int, int, int]:
    tokens = bucket["tokens"]
    return tokens["input"], tokens["output"], tokens["cached"]


def _bucket_key(group_by: exact.GroupBy, query: exact.StatsQuery, row: Any) -> str:
    if group_by == "day":
        return str(row.created_at.astimezone(ZoneInfo(query.tz)).date().isoformat())
    if group_by == "status":
        return "running"
    return str(row.agent_id if group_by == "agent" else row.repo_id)


async def _running_tools(
    db: AsyncSession, query: exact.StatsQuery, group_by: exact.GroupBy, buckets: list[Any]
) -> None:
    """Add the tool calls of the range's running runs (few: one per active session at
    most) to their buckets."""
    failed = func.sum(case((ToolCall.status == "error", 1), else_=0))
    stmt = (
        select(Run.created_at, Run.agent_id, Run.repo_id, func.count(ToolCall.id), failed)
        .join(ToolCall, ToolCall.run_id == Run.id)
        .where(
            Run.status == "running",
            Run.tool_call_count.is_(None),
            Run.created_at >= query.start,
            Run.created_at < query.end,
        )
        .group_by(Run.id, Run.created_at, Run.agent_id, Run.repo_id)
    )
    if query.repo_id:
        stmt = stmt.where(Run.repo_id == query.repo_id)
    if query.agent_id:
        stmt = stmt.where(Run.agent_id == query.agent_id)
    by_key = {bucket["key"]: bucket for bucket in buckets}
    for row in await db.execute(stmt):
        bucket = by_key.get(_bucket_key(group_by, query, row))
        if bucket is not None:
            bucket["toolCalls"] += int(row[3])
            bucket["toolFailures"] += int(row[4] or 0)
