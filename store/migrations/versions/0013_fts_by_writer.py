"""search index: on SQLite a final text's FTS row is added by the code that inserts the
message (``store.search.index_final_texts``), not by an insert trigger, which tested every
streamed chunk (a tool update paid ~5 µs of the writer's time for it); the triggers of a
rewind's drop and of a delete stay. PostgreSQL: nothing (its GIN index keeps itself).

Revision ID: 0013_fts_by_writer
Revises: 0012_client_tools
Create Date: 2026-11-28 18:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0013_fts_by_writer"
down_revision = "0012_client_tools"
branch_labels = None
depends_on = None

# frozen here: 0011's trigger, as it was
INSERT_TRIGGER = (
    "CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages "
    "WHEN new.partial = 0 AND new.type = 'text' AND new.dropped = 0 "
    "AND json_type(new.content, '$.text') = 'text' BEGIN "
    "INSERT INTO messages_fts (rowid, body, session_id, seq) "
    "VALUES (new.rowid, json_extract(new.content, '$.text'), new.session_id, new.seq); END"
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS messages_fts_insert")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(INSERT_TRIGGER)
