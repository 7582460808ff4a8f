"""run roll-ups (tokens, cost, tool calls) and the indexes /api/stats scans

Revision ID: 0004_stats_indexes
Revises: 0003_workspaces
Create Date: 2026-11-24 16:20:00
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0004_stats_indexes"
down_revision = "0003_workspaces"
branch_labels = None
depends_on = None

_ROLLUPS: tuple[tuple[str, sa.types.TypeEngine[Any]], ...] = (
    ("input_tokens", sa.BigInteger()),
    ("output_tokens", sa.BigInteger()),
    ("cached_tokens", sa.BigInteger()),
    ("cost_amount", sa.Float()),
    ("cost_currency", sa.String(length=16)),
    ("tool_call_count", sa.Integer()),
    ("tool_failure_count", sa.Integer()),
)
_RUNS_INDEX = [
    "created_at",
    "agent_id",
    "repo_id",
    "status",
    "duration_ms",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "cost_amount",
    "cost_currency",
    "tool_call_count",
    "tool_failure_count",
]

_COUNTS = """
    tool_call_count = (SELECT count(*) FROM tool_calls t WHERE t.run_id = runs.id),
    tool_failure_count = (
        SELECT count(*) FROM tool_calls t WHERE t.run_id = runs.id AND t.status = 'error')
"""


def _number_sqlite(column: str, key: str, cast: str) -> str:
    path = f"'$.{key}'"
    return (
        f"CASE WHEN json_type({column}, {path}) IN ('integer', 'real') "
        f"THEN CAST(json_extract({column}, {path}) AS {cast}) END"
    )


def _number_pg(column: str, key: str, cast: str) -> str:
    return (
        f"CASE WHEN jsonb_typeof({column} -> '{key}') = 'number' "
        f"THEN ({column} ->> '{key}')::numeric::{cast} END"
    )


def _backfill() -> None:
    """Runs that ended before this revision get their roll-ups from their JSON."""
    sqlite = op.get_bind().dialect.name == "sqlite"
    number = _number_sqlite if sqlite else _number_pg
    big, real = ("INTEGER", "REAL") if sqlite else ("bigint", "double precision")
    currency = (
        "CASE WHEN json_type(cost, '$.currency') = 'text' "
        "THEN substr(json_extract(cost, '$.currency'), 1, 16) END"
        if sqlite
        else "CASE WHEN jsonb_typeof(cost -> 'currency') = 'string' "
        "THEN left(cost ->> 'currency', 16) END"
    )
    op.execute(
        f"""UPDATE runs SET
        input_tokens = {number("usage", "inputTokens", big)},
        output_tokens = {number("usage", "outputTokens", big)},
        cached_tokens = {number("usage", "cachedReadTokens", big)},
        cost_amount = {number("cost", "amount", real)},
        cost_currency = {currency},
        {_COUNTS}
        WHERE status <> 'running'"""  # noqa: S608 (constant fragments only, no input)
    )


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        for name, kind in _ROLLUPS:
            batch.add_column(sa.Column(name, kind, nullable=True))
    _backfill()
    op.create_index("ix_runs_stats", "runs", _RUNS_INDEX, unique=False)
    op.create_index(
        "ix_tool_calls_stats",
        "tool_calls",
        ["created_at", "tool_name", "status", "duration_ms"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_tool_calls_stats", table_name="tool_calls")
    op.drop_index("ix_runs_stats", table_name="runs")
    with op.batch_alter_table("runs") as batch:
        for name, _kind in reversed(_ROLLUPS):
            batch.drop_column(name)
