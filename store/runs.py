"""Repository functions for runs and their tool calls. They never commit."""

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypedDict

import msgspec
from sqlalchemy import Table, bindparam, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from store.jsontypes import JsonValue
from store.models import Run, SessionRecord, ToolCall

__all__ = [
    "RunBrief",
    "ToolCallValues",
    "RunFilter",
    "get_run",
    "get_tool_call",
    "insert_tool_call",
    "last_step",
    "list_runs",
    "list_tool_calls",
    "resumed_by",
    "running_runs",
    "runs_with_status",
    "session_of_run",
    "update_run",
    "update_tool_call",
]

# One cached Core statement: the SET clause comes from the parameters' keys. Built per
# call through the ORM, statement construction was most of each update's cost.
_TOOL_CALLS: Table = ToolCall.__table__  # type: ignore[assignment] # declarative tables are Tables
_UPDATE_TOOL_CALL = update(_TOOL_CALLS).where(_TOOL_CALLS.c.id == bindparam("row_id"))


class RunFilter(msgspec.Struct, frozen=True):
    session_id: str | None = None
    repo_id: str | None = None
    agent_id: str | None = None
    parent_run_id: str | None = None
    statuses: tuple[str, ...] = ()
    # A reader who is no admin: runs of team sessions and of their own private ones.
    visible_to: str | None = None


async def get_run(db: AsyncSession, run_id: str) -> Run | None:
    return await db.get(Run, run_id)


# What the BIGINT and double columns take; the domain checks an agent's numbers tighter
# (server/sessions/live/agent_numbers.py); this is the last guard before the write.
_BIGINT = 2**63 - 1


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int) and abs(value) > _BIGINT:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _count(value: Any) -> int | None:
    """A token count for its BIGINT column: a finite number in [0, 2^63-1], else None."""
    number = _number(value)
    if number is None or number < 0 or number >= _BIGINT:
        return None
    return int(number)


class ToolCallValues(TypedDict, total=False):
    """Columns of a tool call's row: all of them for its insert, some for an update."""

    id: str
    run_id: str
    session_id: str
    tool_call_id: str
    step_number: int
    created_at: datetime
    message_id: str
    tool_name: JsonValue  # the agent's title and kind, as its tool message holds them
    kind: JsonValue
    input: JsonValue
    output: JsonValue
    status: str
    started_at: datetime
    duration_ms: int
    completed_at: datetime


def _rollups(run_id: str, values: Mapping[str, object]) -> dict[str, object]:
    """The plain columns /api/stats aggregates, from a run's end values: tokens from
    ``usage``, amount and currency from ``cost``, and its tool calls counted."""
    out: dict[str, object] = {}
    if "usage" in values:
        usage = values["usage"] if isinstance(values["usage"], dict) else {}
        out["input_tokens"] = _count(usage.get("inputTokens"))
        out["output_tokens"] = _count(usage.get("outputTokens"))
        out["cached_tokens"] = _count(usage.get("cachedReadTokens"))
    if "cost" in values:
        cost = values["cost"] if isinstance(values["cost"], dict) else {}
        amount = _number(cost.get("amount"))
        currency = cost.get("currency")
        out["cost_amount"] = amount
        out["cost_currency"] = (
            currency[:16] if isinstance(currency, str) and amount is not None else None
        )
    if values.get("status") not in (None, "running"):
        calls = select(func.count()).where(ToolCall.run_id == run_id)
        out["tool_call_count"] = calls.scalar_subquery()
        out["tool_failure_count"] = calls.where(ToolCall.status == "error").scalar_subquery()
    return out


async def update_run(db: AsyncSession, run_id: str, **values: Any) -> None:
    values = {**values, **_rollups(run_id, values)}
    await db.execute(update(Run).where(Run.id == run_id).values(**values))


async def resumed_by(db: AsyncSession, run_id: str) -> Run | None:
    """The run that resumed ``run_id``, if one did."""
    query = select(Run).where(Run.resumed_from == run_id).order_by(Run.created_at).limit(1)
    return (await db.execute(query)).scalars().first()


async def last_step(db: AsyncSession, run_id: str) -> int:
    """The highest step number booked for the run's tool calls (0 when none)."""
    query = select(func.max(ToolCall.step_number)).where(ToolCall.run_id == run_id)
    return int((await db.execute(query)).scalar() or 0)


class RunBrief(msgspec.Struct, frozen=True):
    """What start-up recovery reads of a run."""

    id: str
    session_id: str
    agent_id: str
    created_at: datetime
    step_count: int


async def runs_with_status(db: AsyncSession, status: str) -> list[RunBrief]:
    """Every run with ``status``, read with the table's own columns: at start-up (the
    recovery's reads) no ORM mapper is configured and no ORM statement compiled."""
    t = Run.__table__.c
    query = select(t.id, t.session_id, t.agent_id, t.created_at, t.step_count)
    return [RunBrief(*row) for row in await db.execute(query.where(t.status == status))]


async def running_runs(db: AsyncSession, session_id: str) -> Sequence[Run]:
    """The session's runs still ``running``."""
    query = select(Run).where(Run.session_id == session_id, Run.status == "running")
    return (await db.execute(query)).scalars().all()


async def list_runs(
    db: AsyncSession, where: RunFilter, *, limit: int, before: tuple[datetime, str] | None
) -> Sequence[Run]:
    """Newest first; ``before`` = (created_at, id) of the last row already seen."""
    query = select(Run)
    if where.session_id:
        query = query.where(Run.session_id == where.session_id)
    if where.repo_id:
        query = query.where(Run.repo_id == where.repo_id)
    if where.agent_id:
        query = query.where(Run.agent_id == where.agent_id)
    if where.parent_run_id:
        query = query.where(Run.parent_run_id == where.parent_run_id)
    if where.statuses:
        query = query.where(Run.status.in_(where.statuses))
    if where.visible_to is not None:
        hidden = select(SessionRecord.id).where(
            SessionRecord.visibility == "private",
            func.coalesce(SessionRecord.owner_id, "") != where.visible_to,
        )
        query = query.where(Run.session_id.not_in(hidden))
    if before is not None:
        created, ident = before
        # The bound first, alone: SQLite searches ix_runs_created from it. As one OR
        # ("earlier, or as early with a smaller id") it scanned the index from the newest
        # run down to the cursor: a deep page's cost grew with the table
        # (scripts/bench-scale).
        query = query.where(
            Run.created_at <= created, (Run.created_at < created) | (Run.id < ident)
        )
    query = query.order_by(Run.created_at.desc(), Run.id.desc()).limit(limit)
    return (await db.execute(query)).scalars().all()


async def get_tool_call(db: AsyncSession, call_id: str) -> ToolCall | None:
    return await db.get(ToolCall, call_id)


async def list_tool_calls(
    db: AsyncSession,
    run_id: str,
    *,
    tool_name: str | None,
    statuses: tuple[str, ...],
    limit: int,
    after: tuple[int, str] | None,
) -> Sequence[ToolCall]:
    """Step order; ``after`` = (step_number, id) of the last row already seen."""
    query = select(ToolCall).where(ToolCall.run_id == run_id)
    if tool_name:
        query = query.where(ToolCall.tool_name == tool_name)
    if statuses:
        query = query.where(ToolCall.status.in_(statuses))
    if after is not None:
        step, ident = after
        query = query.where(  # the bound alone first, as in list_runs
            ToolCall.step_number >= step, (ToolCall.step_number > step) | (ToolCall.id > ident)
        )
    query = query.order_by(ToolCall.step_number, ToolCall.id).limit(limit)
    return (await db.execute(query)).scalars().all()


async def session_of_run(db: AsyncSession, run_id: str) -> str | None:
    return (await db.execute(select(Run.session_id).where(Run.id == run_id))).scalar_one_or_none()


async def insert_tool_call(db: AsyncSession, row: ToolCallValues, run_id: str, step: int) -> None:
    """A tool call's first row; the run's ``step_count`` follows it, so it stays true
    while the run goes on (and after a crash)."""
    await db.execute(insert(ToolCall).values(**row))
    await db.execute(update(Run).where(Run.id == run_id).values(step_count=step))


async def update_tool_call(db: AsyncSession, row_id: str, values: ToolCallValues) -> None:
    """Write ``values`` (any columns) to the tool call's row, through one cached statement."""
    await db.execute(_UPDATE_TOOL_CALL, {"row_id": row_id, **values})
