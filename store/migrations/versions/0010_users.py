"""users, their tokens and browser sign-ins; a session's owner and visibility; a run's user
(API.md "Users and access")

Revision ID: 0010_users
Revises: 0009_session_merged
Create Date: 2026-11-28 14:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_users"
down_revision = "0009_session_merged"
branch_labels = None
depends_on = None

TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", TIME, nullable=False),
        sa.Column("expires_at", TIME, nullable=True),
        sa.Column("last_used_at", TIME, nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("secret_hash"),
    )
    op.create_index("ix_api_tokens_user", "api_tokens", ["user_id"])
    op.create_table(
        "logins",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=True),
        sa.Column("token_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", TIME, nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["token_id"], ["api_tokens.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("secret_hash"),
    )
    # Plain ADD COLUMN on both databases: a batch (table copy) on SQLite would drop the
    # statistics triggers on runs (0006, 0008).
    op.add_column("sessions", sa.Column("owner_id", sa.String(length=36), nullable=True))
    op.add_column("sessions", sa.Column("owner_name", sa.String(length=255), nullable=True))
    op.add_column(
        "sessions",
        sa.Column("visibility", sa.String(length=16), server_default="team", nullable=False),
    )
    op.create_index("ix_sessions_owner", "sessions", ["owner_id", "status"])
    op.add_column("runs", sa.Column("user_id", sa.String(length=36), nullable=True))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN (SQLite 3.35+, PostgreSQL): no table copy, triggers kept.
    op.execute("ALTER TABLE runs DROP COLUMN user_id")
    op.drop_index("ix_sessions_owner", table_name="sessions")
    for column in ("visibility", "owner_name", "owner_id"):
        op.execute(f"ALTER TABLE sessions DROP COLUMN {column}")
    op.drop_table("logins")
    op.drop_index("ix_api_tokens_user", table_name="api_tokens")
    op.drop_table("api_tokens")
    op.drop_table("users")
