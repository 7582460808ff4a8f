"""finding and keeping sessions: full-text search over titles and final message texts
(SQLite FTS5 tables kept by triggers; PostgreSQL GIN indexes on ``to_tsvector``), the
title's source, archived sessions, and an index for the list in activity order

Revision ID: 0011_sessions_search
Revises: 0010_users
Create Date: 2026-11-28 14:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_sessions_search"
down_revision = "0010_users"
branch_labels = None
depends_on = None

# What is indexed: user prompts and whole agent messages (the final text after the
# streamed chunks), never a partial chunk, never a message a rewind dropped.

# frozen here (store/search.py reads these objects by name)
SQLITE_UP = (
    "CREATE VIRTUAL TABLE messages_fts USING fts5("
    "body, session_id UNINDEXED, seq UNINDEXED, tokenize = 'unicode61 remove_diacritics 2')",
    "CREATE VIRTUAL TABLE sessions_fts USING fts5("
    "title, session_id UNINDEXED, tokenize = 'unicode61 remove_diacritics 2')",
    # the rowid is the message's own, so a delete finds its entry without a lookup
    "CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages "
    "WHEN new.partial = 0 AND new.type = 'text' AND new.dropped = 0 "
    "AND json_type(new.content, '$.text') = 'text' BEGIN "
    "INSERT INTO messages_fts (rowid, body, session_id, seq) "
    "VALUES (new.rowid, json_extract(new.content, '$.text'), new.session_id, new.seq); END",
    "CREATE TRIGGER messages_fts_drop AFTER UPDATE OF dropped ON messages "
    "WHEN new.dropped = 1 AND old.dropped = 0 AND old.partial = 0 AND old.type = 'text' BEGIN "
    "DELETE FROM messages_fts WHERE rowid = old.rowid; END",
    "CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages "
    "WHEN old.partial = 0 AND old.type = 'text' AND old.dropped = 0 BEGIN "
    "DELETE FROM messages_fts WHERE rowid = old.rowid; END",
    "CREATE TRIGGER sessions_fts_insert AFTER INSERT ON sessions "
    "WHEN new.title IS NOT NULL BEGIN "
    "INSERT INTO sessions_fts (rowid, title, session_id) "
    "VALUES (new.rowid, new.title, new.id); END",
    "CREATE TRIGGER sessions_fts_update AFTER UPDATE OF title ON sessions BEGIN "
    "DELETE FROM sessions_fts WHERE rowid = old.rowid; "
    "INSERT INTO sessions_fts (rowid, title, session_id) "
    "SELECT new.rowid, new.title, new.id WHERE new.title IS NOT NULL; END",
    "CREATE TRIGGER sessions_fts_delete AFTER DELETE ON sessions BEGIN "
    "DELETE FROM sessions_fts WHERE rowid = old.rowid; END",
    "INSERT INTO messages_fts (rowid, body, session_id, seq) "
    "SELECT rowid, json_extract(content, '$.text'), session_id, seq FROM messages "
    "WHERE partial = 0 AND type = 'text' AND dropped = 0 AND json_type(content, '$.text') = 'text'",
    "INSERT INTO sessions_fts (rowid, title, session_id) "
    "SELECT rowid, title, id FROM sessions WHERE title IS NOT NULL",
)
SQLITE_DOWN = (
    "DROP TRIGGER IF EXISTS messages_fts_insert",
    "DROP TRIGGER IF EXISTS messages_fts_drop",
    "DROP TRIGGER IF EXISTS messages_fts_delete",
    "DROP TRIGGER IF EXISTS sessions_fts_insert",
    "DROP TRIGGER IF EXISTS sessions_fts_update",
    "DROP TRIGGER IF EXISTS sessions_fts_delete",
    "DROP TABLE IF EXISTS messages_fts",
    "DROP TABLE IF EXISTS sessions_fts",
)
PG_UP = (
    "CREATE INDEX ix_messages_search ON messages "
    "USING gin (to_tsvector('simple'::regconfig, content ->> 'text')) "
    "WHERE partial = false AND type = 'text' AND dropped = false",
    "CREATE INDEX ix_sessions_search ON sessions "
    "USING gin (to_tsvector('simple'::regconfig, coalesce(title, '')))",
)
PG_DOWN = (
    "DROP INDEX IF EXISTS ix_messages_search",
    "DROP INDEX IF EXISTS ix_sessions_search",
)


def upgrade() -> None:
    op.add_column("sessions", sa.Column("title_source", sa.String(16), nullable=True))
    op.add_column(
        "sessions",
        sa.Column("archived", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.create_index("ix_sessions_activity", "sessions", ["last_activity_at", "id"])
    dialect = op.get_bind().dialect.name
    for statement in SQLITE_UP if dialect == "sqlite" else PG_UP:
        op.execute(statement)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    for statement in SQLITE_DOWN if dialect == "sqlite" else PG_DOWN:
        op.execute(statement)
    op.drop_index("ix_sessions_activity", table_name="sessions")
    # plain ALTER TABLE DROP COLUMN (SQLite 3.35+): a batch copy would rebuild the table
    op.drop_column("sessions", "archived")
    op.drop_column("sessions", "title_source")
