"""agent controls: the last known controls and the values kept for resumption; prompt
attachments (images)

Revision ID: 0005_agent_controls
Revises: 0004_stats_indexes
Create Date: 2026-11-24 16:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

revision = "0005_agent_controls"
down_revision = "0004_stats_indexes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("controls", JSON_TYPE, nullable=True))
        batch.add_column(sa.Column("agent_config", JSON_TYPE, nullable=True))
    op.create_table(
        "attachments",
        sa.Column("session_id", sa.String(length=36), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("mime_type", sa.String(length=64), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("session_id", "sha256"),
    )


def downgrade() -> None:
    op.drop_table("attachments")
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("agent_config")
        batch.drop_column("controls")
