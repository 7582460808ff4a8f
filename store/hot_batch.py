"""What the writer hands a hot writer (store/hot_writes.py on SQLite,
store/hot_writes_pg.py on PostgreSQL): one transaction's batch, the tool-call ops it may
hold, and the statements and columns both drivers write them with."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from store import runs as run_store
from store.message_row import MessageRow
from store.models import ToolCall

__all__ = [
    "HOT_OPS",
    "JSON_TOOL_COLUMNS",
    "STEP_COUNT",
    "TOOL_COLUMNS",
    "HotBatch",
    "HotWriter",
    "ToolCallInsert",
    "ToolCallUpdate",
    "check_tool_columns",
]

STEP_COUNT = "UPDATE runs SET step_count=? WHERE id=?"
"""A run's step count, in SQLite's parameter style."""
TOOL_COLUMNS = frozenset(column.name for column in ToolCall.__table__.columns)
JSON_TOOL_COLUMNS = frozenset({"input", "output"})


class ToolCallInsert:
    """The writer's op for a tool call's first row (and its run's step count). Run as an
    op on the SQLAlchemy path; the hot path writes it as a row of its batch."""

    __slots__ = ("row", "run_id", "step")

    def __init__(self, row: run_store.ToolCallValues, run_id: str, step: int) -> None:
        self.row = row
        self.run_id = run_id
        self.step = step

    async def __call__(self, db: AsyncSession) -> None:
        await run_store.insert_tool_call(db, self.row, self.run_id, self.step)


class ToolCallUpdate:
    """The writer's op for a tool call's later state. ``take`` returns the values merged
    since the op was queued (the same values again on a retry)."""

    __slots__ = ("row_id", "take")

    def __init__(self, row_id: str, take: Callable[[], run_store.ToolCallValues]) -> None:
        self.row_id = row_id
        self.take = take

    async def __call__(self, db: AsyncSession) -> None:
        await run_store.update_tool_call(db, self.row_id, self.take())


HOT_OPS = (ToolCallInsert, ToolCallUpdate)


def check_tool_columns(columns: tuple[str, ...]) -> None:
    """Raise unless ``columns`` are all tool_calls columns: a statement is built from
    their names, which come from code, never from input."""
    if not TOOL_COLUMNS.issuperset(columns):
        raise ValueError(f"not tool_calls columns: {sorted(set(columns) - TOOL_COLUMNS)}")


class HotBatch(msgspec.Struct):
    """One transaction's worth: message rows, each session's last (seq, time), tool ops,
    and the final texts among the rows (``store.search.FTS_ADD`` parameters: SQLite's
    search index rows, added in the same transaction)."""

    messages: list[MessageRow] = msgspec.field(default_factory=list)
    activity: dict[str, tuple[int, str]] = msgspec.field(default_factory=dict)  # seq, stamp
    stamps: dict[str, datetime] = msgspec.field(default_factory=dict)  # stamp -> its datetime
    tools: list[ToolCallInsert | ToolCallUpdate] = msgspec.field(default_factory=list)
    finals: list[dict[str, object]] = msgspec.field(default_factory=list)


class HotWriter(Protocol):
    async def commit(self, batch: HotBatch, announce: tuple[str, list[str]] | None) -> None: ...

    async def close(self) -> None: ...
