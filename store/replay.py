"""Reading a session's messages back as ``MessageRow``s, for its WebSocket frames and the
message pages: the content as the JSON text stored, no ORM objects.

Why: loading a page as ``Message`` objects cost most of a replay's CPU (identity map,
instance state, attribute instrumentation, the ``raw`` column JSON-decoded whether used
or not; bench/results/notes.md has the profile). Here a page is one Core ``SELECT`` of a
row's columns; the JSON comes back as text (SQLite stores it as text; PostgreSQL's
``jsonb`` is cast to text by the database) and the timestamp as the text SQLite stores
(PostgreSQL formats its own the same way), so nothing is decoded or formatted per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select, String, Text, bindparam, cast, func, null, select, type_coerce
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from store.message_row import MESSAGE_COLUMNS, MessageRow
from store.messages import MessageFilter, filtered
from store.models import Message

__all__ = ["frame_rows", "view_rows"]

_QUERIES: dict[tuple[str, bool], Select[Any]] = {}


def _json_text(dialect: str, column: Any) -> Any:
    """A JSON column as text: as stored (SQLite), or cast by the database (``jsonb``)."""
    return type_coerce(column, String) if dialect == "sqlite" else cast(column, Text)


def _created(dialect: str) -> Any:
    """``created_at`` as SQLite's stored text (no datetime parsing), and PostgreSQL's
    ``timestamptz`` formatted by the database as that same UTC text."""
    if dialect == "sqlite":
        return type_coerce(Message.created_at, String)
    utc = func.timezone("UTC", Message.created_at)
    return func.to_char(utc, "YYYY-MM-DD HH24:MI:SS.US")


def _columns(dialect: str, *, raw: bool) -> list[Any]:
    """A ``MessageRow``'s columns in its order; ``raw`` NULL unless asked for (the ACP
    frame is the largest column and only the export reads it)."""
    table = Message.__table__
    columns: list[Any] = []
    for name in MESSAGE_COLUMNS:
        if name == "content" or (name == "raw" and raw):
            columns.append(_json_text(dialect, table.c[name]))
        elif name == "raw":
            columns.append(null())
        elif name == "created_at":
            columns.append(_created(dialect))
        else:
            columns.append(table.c[name])
    return columns


async def _rows(
    conn: AsyncConnection, query: Select[Any], params: dict[str, Any] | None = None
) -> list[MessageRow]:
    # On the session's connection, not ``db.execute``: a Core statement run through the
    # ORM session still goes through its row loading.
    result = await conn.execute(query, params)
    return [MessageRow(*row) for row in result]  # the select's columns: MESSAGE_COLUMNS


def _query(dialect: str, bounded: bool) -> Select[Any]:
    """The page query for ``dialect`` (built once: bound parameters only)."""
    key = (dialect, bounded)
    query = _QUERIES.get(key)
    if query is None:
        query = (
            select(*_columns(dialect, raw=False))
            .where(
                Message.session_id == bindparam("session_id"),
                Message.seq > bindparam("after"),
                Message.dropped.is_(False),
            )
            .order_by(Message.seq)
            .limit(bindparam("limit"))
        )
        if bounded:
            query = query.where(Message.seq <= bindparam("upto"))
        _QUERIES[key] = query
    return query


async def frame_rows(
    db: AsyncSession, session_id: str, after: int, *, limit: int, upto: int | None = None
) -> Sequence[MessageRow]:
    """The session's messages with ``after < seq (<= upto)``, not dropped, in seq order,
    at most ``limit``: what ``list_messages`` with the same filter returns, as rows
    (``raw`` not read)."""
    params: dict[str, Any] = {"session_id": session_id, "after": after, "limit": limit}
    if upto is not None:
        params["upto"] = upto
    query = _query(db.get_bind().dialect.name, upto is not None)
    return await _rows(await db.connection(), query, params)


async def view_rows(
    db: AsyncSession,
    session_id: str,
    where: MessageFilter,
    *,
    limit: int | None,
    raw: bool = False,
) -> Sequence[MessageRow]:
    """What ``list_messages`` returns for the same arguments, as rows (``raw`` read only
    when asked for)."""
    dialect = db.get_bind().dialect.name
    query = filtered(select(*_columns(dialect, raw=raw)), session_id, where, limit)
    return await _rows(await db.connection(), query)
