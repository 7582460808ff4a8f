"""indexes for a session's own rows at scale: a session's runs newest first by cursor,
and the session's elicitation messages (a partial index: start-up recovery finds the
pending ones of every session without scanning the messages table)

Revision ID: 0007_session_indexes
Revises: 0006_stats_rollup
Create Date: 2026-11-24 21:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_session_indexes"
down_revision = "0006_stats_rollup"
branch_labels = None
depends_on = None

ELICITATIONS = sa.text("type = 'elicitation'")


def upgrade() -> None:
    op.create_index("ix_runs_session_created", "runs", ["session_id", "created_at", "id"])
    op.drop_index("ix_runs_session", table_name="runs")
    op.create_index(
        "ix_messages_elicitation",
        "messages",
        ["session_id", "seq"],
        sqlite_where=ELICITATIONS,
        postgresql_where=ELICITATIONS,
    )


def downgrade() -> None:
    op.drop_index("ix_messages_elicitation", table_name="messages")
    op.create_index("ix_runs_session", "runs", ["session_id"])
    op.drop_index("ix_runs_session_created", table_name="runs")
