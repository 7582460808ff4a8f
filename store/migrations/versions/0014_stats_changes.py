"""SQLite's roll-up triggers hand each change to a view whose INSTEAD OF trigger holds the
upsert: 2 large upserts in the schema instead of 10 (160 KB of trigger SQL -> 51 KB), which
SQLite parses on every connection's first statement (~13 ms -> ~4 ms; store/rollup.py).
The roll-up's rows and sums are unchanged; PostgreSQL keeps its triggers.

Revision ID: 0014_stats_changes
Revises: 0013_search_upkeep
Create Date: 2026-11-29 05:00:00
"""

from __future__ import annotations

from alembic import op

from store import rollup

revision = "0014_stats_changes"
down_revision = "0013_search_upkeep"
branch_labels = None
depends_on = None

# frozen: the shapes 0008 left (store/rollup.py may move on)
SHAPES = (*rollup.SHAPES_0006, *rollup.SHAPES_0008_ADDED)


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for statement in rollup.drop_trigger_sql("sqlite"):
        op.execute(statement)
    for statement in rollup.change_trigger_sql(SHAPES):
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for statement in rollup.drop_change_trigger_sql():
        op.execute(statement)
    for statement in rollup.trigger_sql("sqlite", SHAPES):
        op.execute(statement)
