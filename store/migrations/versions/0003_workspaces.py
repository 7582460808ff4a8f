"""session workspaces: isolation, worktree path, branch, base ref and commit

Revision ID: 0003_workspaces
Revises: 0002
Create Date: 2026-11-24 16:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_workspaces"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(
            sa.Column("isolation", sa.String(length=16), nullable=False, server_default="none")
        )
        batch.add_column(sa.Column("workspace_path", sa.Text(), nullable=True))
        batch.add_column(sa.Column("branch", sa.Text(), nullable=True))
        batch.add_column(sa.Column("base_ref", sa.Text(), nullable=True))
        batch.add_column(sa.Column("base_commit", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("base_commit")
        batch.drop_column("base_ref")
        batch.drop_column("branch")
        batch.drop_column("workspace_path")
        batch.drop_column("isolation")
