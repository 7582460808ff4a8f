"""the statistics roll-up keeps 15 min slots filtered by agent and/or repository too (a year
by day in a zone with a half- or quarter-hour offset, filtered, read ~40 000 runs a year
per agent at its local midnights; now it reads roll-up rows only)

Revision ID: 0008_stats_half_hours
Revises: 0007_session_indexes
Create Date: 2026-11-24 23:40:00
"""

from __future__ import annotations

from alembic import op

from store import rollup

revision = "0008_stats_half_hours"
down_revision = "0007_session_indexes"
branch_labels = None
depends_on = None

QUARTER = 900
# frozen: the shapes of 0006 and those this migration adds (store/rollup.py may move on)
ADDED = ((QUARTER, 1, 0, "-"), (QUARTER, 0, 1, "-"), (QUARTER, 1, 1, "-"))
SHAPES = (*rollup.SHAPES_0006, *ADDED)


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    for statement in rollup.drop_trigger_sql(dialect):
        op.execute(statement)
    for statement in rollup.backfill_sql(dialect, ADDED, tools=False):
        op.execute(statement)
    for statement in rollup.trigger_sql(dialect, SHAPES):
        op.execute(statement)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    for statement in rollup.drop_trigger_sql(dialect):
        op.execute(statement)
    op.execute("DELETE FROM stats_runs WHERE grain = 900 AND (fa <> '' OR fr <> '')")
    for statement in rollup.trigger_sql(dialect, rollup.SHAPES_0006):
        op.execute(statement)
