"""client tools: the set a session registers (``sessions.client_tools``), and a partial
index over its ``client_tool`` messages, so that start-up recovery finds the calls left
pending by a dead server without scanning the messages table

Revision ID: 0012_client_tools
Revises: 0011_sessions_search
Create Date: 2026-11-28 14:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
CLIENT_TOOLS = sa.text("type = 'client_tool'")

revision = "0012_client_tools"
down_revision = "0011_sessions_search"
branch_labels = None
depends_on = None


# Plain ALTER TABLE, never a batch copy of ``sessions``: on SQLite a copy drops the old
# table, which (foreign keys on) deletes every session's messages and runs by cascade and
# drops the search triggers that 0011 put on it.


def upgrade() -> None:
    op.add_column("sessions", sa.Column("client_tools", JSON_TYPE, nullable=True))
    op.create_index(
        "ix_messages_client_tool",
        "messages",
        ["session_id", "seq"],
        sqlite_where=CLIENT_TOOLS,
        postgresql_where=CLIENT_TOOLS,
    )


def downgrade() -> None:
    op.drop_index("ix_messages_client_tool", table_name="messages")
    op.drop_column("sessions", "client_tools")
