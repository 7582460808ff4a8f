"""the statistics roll-up: sums per time slot kept by triggers (store/rollup.py)

Revision ID: 0006_stats_rollup
Revises: 0005_agent_controls
Create Date: 2026-11-24 20:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from store import rollup

revision = "0006_stats_rollup"
down_revision = "0005_agent_controls"
branch_labels = None
depends_on = None


def upgrade() -> None:
    metadata = sa.MetaData()
    bind = op.get_bind()
    for table in (rollup.run_table(metadata), rollup.tool_table(metadata)):
        table.create(bind)
    dialect = bind.dialect.name
    for statement in rollup.backfill_sql(dialect, rollup.SHAPES_0006):
        op.execute(statement)
    for statement in rollup.trigger_sql(dialect, rollup.SHAPES_0006):
        op.execute(statement)


def downgrade() -> None:
    for statement in rollup.drop_trigger_sql(op.get_bind().dialect.name):
        op.execute(statement)
    op.drop_table("stats_tools")
    op.drop_table("stats_runs")
