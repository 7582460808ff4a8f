"""sessions remember their last merge (API.md, Review: ``Workspace.merged``)

Revision ID: 0009_session_merged
Revises: 0008_stats_half_hours
Create Date: 2026-11-28 14:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

revision = "0009_session_merged"
down_revision = "0008_stats_half_hours"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("merged", JSON_TYPE, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("merged")
