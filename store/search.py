"""Full-text search over session titles and final message texts (API.md, Finding and
keeping sessions): SQLite's FTS5 tables ``messages_fts`` and ``sessions_fts`` (migration
0011), and PostgreSQL's GIN indexes ``ix_messages_search`` and ``ix_sessions_search`` on
a stored ``to_tsvector('simple', ...)`` column (0013) and ``to_tsvector`` of the title.

On SQLite whoever inserts a final text adds its FTS row in the same transaction
(``FTS_ADD``: the hot writer, for the final texts the writer picked out of its batch;
``store.messages.insert_messages``, through ``index_final_texts``); triggers keep
the rest (a rewind's drop, a delete, titles). An insert trigger did it before (0011), and
cost every streamed chunk its test, a tool update ~5 µs of the writer's time (migration
0013 took it out; bench/results/notes.md). On PostgreSQL a generated column does it.

The words of a query are user input, never query syntax: ``terms`` keeps only the words
(runs of letters and digits, as both engines' tokenizers split them) and each becomes a
quoted FTS5 phrase or a plain tsquery lexeme; the last one also matches as a prefix, so a
search box can search while a word is still being typed."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

__all__ = [
    "FTS_ADD",
    "HIGHLIGHT_END",
    "HIGHLIGHT_START",
    "INDEX_OBJECTS",
    "MAX_QUERY_CHARS",
    "Hit",
    "SearchFilter",
    "count_matches",
    "index_final_texts",
    "is_final_text",
    "is_index_object",
    "search_sessions",
    "terms",
]

# A snippet's matched words are between these two characters (Unicode private use: they
# never stand for anything in a message, so a client can split on them safely).
HIGHLIGHT_START = "\ue000"
HIGHLIGHT_END = "\ue001"
MAX_QUERY_CHARS = 500
MAX_TERMS = 16
MAX_TERM_CHARS = 64
SNIPPET_WORDS = 16
# The matching messages a search ranks: the most recent ones. A word in most messages
# would otherwise cost a rank for each of them (hundreds of thousands at a million
# messages); its older hits are left out, and titles always count.
CANDIDATES = 1_000

_WORD = re.compile(r"[^\W_]+")

# The index objects of migrations 0011 and 0013, which the models do not describe (FTS5
# virtual tables and their shadow tables; PostgreSQL's column and indexes).
INDEX_OBJECTS = (
    "messages_fts",
    "sessions_fts",
    "ix_messages_search",
    "ix_sessions_search",
    "search_tsv",  # PostgreSQL's stored tsvector column of messages (0013)
)


# SQLite: the FTS row of the final text at (session_id, seq), just inserted.
FTS_ADD = (
    "INSERT INTO messages_fts (rowid, body, session_id, seq) "
    "SELECT rowid, json_extract(content, '$.text'), session_id, seq FROM messages "
    "WHERE session_id = :session_id AND seq = :seq AND json_type(content, '$.text') = 'text'"
)


def is_final_text(kind: object, partial: object, dropped: object) -> bool:
    """Whether a message row is indexed: a whole text (a prompt, an agent's message),
    never a streamed chunk or a dropped message."""
    return kind == "text" and not partial and not dropped


def index_final_texts(rows: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """The ``FTS_ADD`` parameters of the final texts among inserted message ``rows``."""
    return [
        {"session_id": row["session_id"], "seq": row["seq"]}
        for row in rows
        if is_final_text(row["type"], row["partial"], row["dropped"])
    ]


def is_index_object(name: str | None) -> bool:
    """Whether ``name`` is one of the search index's own objects (for schema checks)."""
    return name is not None and name.startswith(INDEX_OBJECTS)


def terms(query: str) -> list[str]:
    """The words of ``query``, lower-cased, at most ``MAX_TERMS`` of them."""
    return [w.lower()[:MAX_TERM_CHARS] for w in _WORD.findall(query)][:MAX_TERMS]


def fts5_query(words: Sequence[str], *, prefix: bool = True) -> str:
    """Every word required; each a quoted phrase (no operator, column filter or NEAR can
    come from the user), the last a prefix too unless ``prefix`` is false."""
    phrases = ['"' + w.replace('"', '""') + '"' for w in words]
    if prefix:
        phrases[-1] += "*"
    return " ".join(phrases)


def tsquery(words: Sequence[str]) -> str:
    """The same for ``to_tsquery('simple', ...)``: each word a quoted lexeme."""
    lexemes = ["'" + w.replace("'", "''").replace("\\", "\\\\") + "'" for w in words]
    lexemes[-1] += ":*"
    return " & ".join(lexemes)


class SearchFilter(msgspec.Struct, frozen=True):
    repo_id: str | None = None
    agent_id: str | None = None
    statuses: tuple[str, ...] = ()
    archived: bool | None = False  # None: archived or not
    owner_id: str | None = None
    visible_to: str | None = None  # a reader's id: team sessions and their own private ones


class Hit(msgspec.Struct, frozen=True):
    session_id: str
    total: int  # how many sessions match (the same on every hit of a page)
    seq: int | None  # the best matching message; None when only the title matched
    snippet: str


def _where(where: SearchFilter, params: dict[str, Any]) -> str:
    clauses = []
    if where.repo_id is not None:
        clauses.append("s.repo_id = :repo_id")
        params["repo_id"] = where.repo_id
    if where.agent_id is not None:
        clauses.append("s.agent_id = :agent_id")
        params["agent_id"] = where.agent_id
    if where.statuses:
        clauses.append("s.status IN :statuses")
        params["statuses"] = list(where.statuses)
    if where.archived is not None:
        clauses.append("s.archived = :archived")
        params["archived"] = where.archived
    if where.owner_id is not None:
        clauses.append("s.owner_id = :owner_id")
        params["owner_id"] = where.owner_id
    if where.visible_to is not None:
        clauses.append("(s.visibility <> 'private' OR s.owner_id = :visible_to)")
        params["visible_to"] = where.visible_to
    return " AND ".join(clauses) or "1 = 1"


# Both engines' queries end alike: a session's best message hit and its title hit, one
# row per session (the message's seq and rowid, both scores), joined to its row.
_MERGED = """
), scored AS (
    SELECT session_id, seq, rid, score AS mscore, CAST(NULL AS DOUBLE PRECISION) AS tscore
    FROM best
    UNION ALL
    SELECT session_id, CAST(NULL AS INTEGER), CAST(NULL AS BIGINT),
        CAST(NULL AS DOUBLE PRECISION), score
    FROM titled
), matched AS (
    SELECT session_id, max(seq) AS seq, max(rid) AS rid, min(mscore) AS mscore,
        min(tscore) AS tscore
    FROM scored GROUP BY session_id
)
SELECT {columns}
FROM matched m JOIN sessions s ON s.id = m.session_id
WHERE {where}
"""

# Titles first (bm25: lower is better), then the session's best message: SQLite's bare
# columns next to min() come from the row that has it. bm25() cannot be an aggregate's
# argument: the hits are materialized first.
_SQLITE = """
WITH hits AS MATERIALIZED (
    SELECT session_id, seq, rowid AS rid, bm25(messages_fts) AS score
    FROM messages_fts WHERE messages_fts MATCH :q ORDER BY rowid DESC LIMIT :candidates
), best AS (
    SELECT session_id, seq, rid, min(score) AS score FROM hits GROUP BY session_id
), titled AS (
    SELECT session_id, bm25(sessions_fts) AS score
    FROM sessions_fts WHERE sessions_fts MATCH :q"""
_SQLITE += _MERGED

# The stored ``search_tsv`` (0013) has statistics: for a common word the planner walks
# ``ix_messages_search_recent`` newest first and stops at the candidates; for a rare one
# it takes the GIN index. It can choose only with the query's words in hand: see
# ``_query`` (a custom plan each time).
_PG = """
WITH hits AS MATERIALIZED (
    SELECT m.session_id, m.seq, m.search_tsv FROM messages m
    WHERE m.search_tsv @@ to_tsquery('simple'::regconfig, :q)
    ORDER BY m.created_at DESC LIMIT :candidates
), best AS (
    SELECT DISTINCT ON (session_id) session_id, seq, NULL::bigint AS rid,
        -ts_rank(search_tsv, to_tsquery('simple'::regconfig, :q)) AS score
    FROM hits ORDER BY session_id, score
), titled AS (
    SELECT id AS session_id,
        -ts_rank(to_tsvector('simple'::regconfig, coalesce(title, '')),
                 to_tsquery('simple'::regconfig, :q)) AS score
    FROM sessions
    WHERE to_tsvector('simple'::regconfig, coalesce(title, ''))
          @@ to_tsquery('simple'::regconfig, :q)"""
_PG += _MERGED

_ORDER = " ORDER BY (m.tscore IS NULL), m.tscore, m.mscore, s.id LIMIT :limit OFFSET :offset"


async def _query(
    db: AsyncSession, words: Sequence[str], where: SearchFilter
) -> tuple[str, dict[str, Any]]:
    postgres = db.get_bind().dialect.name == "postgresql"
    params: dict[str, Any] = {"candidates": CANDIDATES}
    if postgres:
        params["q"] = tsquery(words)
        # asyncpg prepares statements, and after five runs PostgreSQL may keep a generic
        # plan, blind to the words: the GIN index for a word in most messages, or the
        # newest-first walk for a rare one (a walk through every message). This search's
        # transaction plans each run for its own words.
        await db.execute(text("SET LOCAL plan_cache_mode = force_custom_plan"))
    else:
        params["q"] = await _fts5_match(db, words)
    return (_PG if postgres else _SQLITE), params


async def _fts5_match(db: AsyncSession, words: Sequence[str]) -> str:
    """The words exactly when they already fill the candidates, else with the last as a
    prefix. FTS5 reads an exact term's hits newest first and stops at the candidates; a
    prefix (without a prefix index) merges every term it covers first, all their hits:
    a common word typed whole must not pay that."""
    exact = fts5_query(words, prefix=False)
    count = text(
        "SELECT count(*) FROM (SELECT rowid FROM messages_fts WHERE messages_fts MATCH :q "
        "ORDER BY rowid DESC LIMIT :candidates)"
    )
    found = (await db.execute(count, {"q": exact, "candidates": CANDIDATES})).scalar_one()
    return exact if int(found) >= CANDIDATES else fts5_query(words)


def _statement(sql: str, params: dict[str, Any]) -> Any:
    statement = text(sql)
    if "statuses" in params:
        statement = statement.bindparams(bindparam("statuses", expanding=True))
    return statement


async def count_matches(db: AsyncSession, words: Sequence[str], where: SearchFilter) -> int:
    template, params = await _query(db, words, where)
    sql = template.format(columns="count(*)", where=_where(where, params))
    return int((await db.execute(_statement(sql, params), params)).scalar_one())


async def search_sessions(
    db: AsyncSession, words: Sequence[str], where: SearchFilter, *, limit: int, offset: int
) -> list[Hit]:
    """The matching sessions' ids, best first, with the match to show for each."""
    template, params = await _query(db, words, where)
    columns = "s.id, m.seq, s.title, m.rid, count(*) OVER () AS total"
    sql = template.format(columns=columns, where=_where(where, params)) + _ORDER
    params.update(limit=limit, offset=offset)
    rows = (await db.execute(_statement(sql, params), params)).all()
    found = [(row[0], int(row[1]), row[3]) for row in rows if row[1] is not None]
    snippets = await _snippets(db, params["q"], found)
    hits = []
    for session_id, seq, title, _rid, _total in rows:
        if seq is not None:
            snippet = snippets.get((session_id, seq), "")
        else:
            snippet = _mark_title(title or "", words)
        hits.append(Hit(session_id, int(_total), seq, snippet))
    return hits


async def _snippets(
    db: AsyncSession, q: str, found: list[tuple[str, int, int | None]]
) -> dict[tuple[str, int], str]:
    """The snippet of each (session, seq) of a page, in one query; SQLite finds them by
    the FTS row (the message's rowid), PostgreSQL by the unique (session_id, seq)."""
    if not found:
        return {}
    params: dict[str, Any] = {"q": q}
    if db.get_bind().dialect.name == "postgresql":
        pairs = []
        for i, (session_id, seq, _rid) in enumerate(found):
            params[f"s{i}"], params[f"n{i}"] = session_id, seq
            pairs.append(f"(session_id = :s{i} AND seq = :n{i})")
        params["options"] = (
            f'StartSel="{HIGHLIGHT_START}", StopSel="{HIGHLIGHT_END}", '
            f"MaxWords={SNIPPET_WORDS}, MinWords={SNIPPET_WORDS // 2}, "
            'MaxFragments=1, FragmentDelimiter="…"'
        )
        statement = text(
            "SELECT session_id, seq, ts_headline('simple'::regconfig, content ->> 'text', "  # noqa: S608 - placeholders only
            "to_tsquery('simple'::regconfig, :q), :options) FROM messages "
            f"WHERE {' OR '.join(pairs)}"
        )
    else:
        params.update(start=HIGHLIGHT_START, end=HIGHLIGHT_END, rids=[r for *_, r in found])
        statement = text(
            "SELECT session_id, seq, snippet(messages_fts, 0, :start, :end, '…', "  # noqa: S608
            f"{SNIPPET_WORDS}) FROM messages_fts WHERE messages_fts MATCH :q "
            "AND rowid IN :rids"
        ).bindparams(bindparam("rids", expanding=True))
    rows = (await db.execute(statement, params)).all()
    return {(str(row[0]), int(row[1])): str(row[2] or "") for row in rows}


def _mark_title(title: str, words: Sequence[str]) -> str:
    """A title that matched, its matching words marked as the engines mark a snippet."""
    last = len(words) - 1

    def mark(found: re.Match[str]) -> str:
        word = found.group(0)
        lowered = word.lower()
        if any(lowered == w or (i == last and lowered.startswith(w)) for i, w in enumerate(words)):
            return HIGHLIGHT_START + word + HIGHLIGHT_END
        return word

    return _WORD.sub(mark, title)
