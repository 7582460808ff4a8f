"""search index, kept for less and read faster:

- SQLite: a final text's FTS row is added by the code that inserts the message
  (``store.search.index_final_texts``), not by an insert trigger, which tested every
  streamed chunk (a tool update paid ~5 µs of the writer's time for it); the triggers of
  a rewind's drop and of a delete stay.
- PostgreSQL: the final text's ``tsvector`` is a stored generated column, ``search_tsv``
  (NULL for every other row), with the GIN index on it and a btree on ``created_at`` of
  the indexed rows. ANALYZE then knows how common each word is, and the planner walks the
  newest matches backwards for a common word (the search ranks the newest 1 000) instead
  of fetching and sorting every match (a word in 70 % of a million messages: 1.3 s ->
  1 ms; docs/search.md). Adding the column rewrites ``messages`` once (~1 minute a
  million rows, the table locked meanwhile).

Revision ID: 0013_search_upkeep
Revises: 0012_client_tools
Create Date: 2026-11-28 18:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0013_search_upkeep"
down_revision = "0012_client_tools"
branch_labels = None
depends_on = None

# frozen here: 0011's trigger and index, as they were
INSERT_TRIGGER = (
    "CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages "
    "WHEN new.partial = 0 AND new.type = 'text' AND new.dropped = 0 "
    "AND json_type(new.content, '$.text') = 'text' BEGIN "
    "INSERT INTO messages_fts (rowid, body, session_id, seq) "
    "VALUES (new.rowid, json_extract(new.content, '$.text'), new.session_id, new.seq); END"
)
PG_EXPRESSION_INDEX = (
    "CREATE INDEX ix_messages_search ON messages "
    "USING gin (to_tsvector('simple'::regconfig, content ->> 'text')) "
    "WHERE partial = false AND type = 'text' AND dropped = false"
)
# store/search.py reads these objects by name
PG_UP = (
    "ALTER TABLE messages ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS (CASE "
    "WHEN partial = false AND type = 'text' AND dropped = false "
    "THEN to_tsvector('simple'::regconfig, content ->> 'text') END) STORED",
    "DROP INDEX IF EXISTS ix_messages_search",
    "CREATE INDEX ix_messages_search ON messages USING gin (search_tsv) "
    "WHERE search_tsv IS NOT NULL",
    "CREATE INDEX ix_messages_search_recent ON messages (created_at) WHERE search_tsv IS NOT NULL",
    "ANALYZE messages",  # the words' frequencies, before the first search
)
PG_DOWN = (
    "DROP INDEX IF EXISTS ix_messages_search_recent",
    "DROP INDEX IF EXISTS ix_messages_search",
    "ALTER TABLE messages DROP COLUMN IF EXISTS search_tsv",
    PG_EXPRESSION_INDEX,
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS messages_fts_insert")
    else:
        for statement in PG_UP:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(INSERT_TRIGGER)
    else:
        for statement in PG_DOWN:
            op.execute(statement)
