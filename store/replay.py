"""Reading a session's messages for its WebSocket frames: only the frame's columns, the
content as the JSON text stored, no ORM objects.

A profile of the replay of a 100 000-message session (cProfile, in process) had ~19 µs
a message in loading rows as ``Message`` objects (identity map, instance state,
attribute instrumentation; the unused ``raw`` column JSON-decoded too) and ~8 µs in
building the frame from the decoded content. Here a page is one Core ``SELECT`` of the
seven columns a frame needs; the content comes back as text (SQLite stores it as text;
PostgreSQL's ``jsonb`` is cast to text by the database), and on SQLite the timestamp as
the stored text too, so nothing is decoded per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, String, Text, bindparam, cast, select, type_coerce
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncSession

from store.messages import MessageFilter, filtered
from store.models import Message

__all__ = ["FrameRow", "ViewRow", "frame_rows", "view_rows"]

# (id, run_id, seq, role, step_number, content as JSON text, created_at): created_at is
# SQLite's stored text (``YYYY-MM-DD HH:MM:SS.ffffff``, UTC) or, on PostgreSQL, an aware
# UTC datetime.
FrameRow = tuple[str, str | None, int, str, int | None, str, str | datetime]

# (id, session_id, run_id, seq, role, step_number, content as JSON text, created_at as
# in FrameRow), then with ``raw``: (raw as JSON text or None, dropped). A Row: its
# columns by name too (``row.seq``).
ViewRow = Row[*tuple[Any, ...]]

_QUERIES: dict[tuple[str, bool], Select[Any]] = {}


def _json_text(dialect: str, column: Any) -> Any:
    """A JSON column as text: as stored (SQLite), or cast by the database (``jsonb``)."""
    return type_coerce(column, String) if dialect == "sqlite" else cast(column, Text)


def _created(dialect: str) -> Any:
    """``created_at`` as SQLite's stored text (no datetime parsing); PostgreSQL's as is."""
    return type_coerce(Message.created_at, String) if dialect == "sqlite" else Message.created_at


def _query(dialect: str, bounded: bool) -> Select[Any]:
    """The page query for ``dialect`` (built once: bound parameters only)."""
    key = (dialect, bounded)
    query = _QUERIES.get(key)
    if query is None:
        content, created = _json_text(dialect, Message.content), _created(dialect)
        query = (
            select(
                Message.id,
                Message.run_id,
                Message.seq,
                Message.role,
                Message.step_number,
                content,
                created,
            )
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
) -> Sequence[FrameRow]:
    """The session's messages with ``after < seq (<= upto)``, not dropped, in seq order,
    at most ``limit``: what ``list_messages`` with the same filter returns, as frame rows."""
    params: dict[str, Any] = {"session_id": session_id, "after": after, "limit": limit}
    if upto is not None:
        params["upto"] = upto
    query = _query(db.get_bind().dialect.name, upto is not None)
    # On the session's connection, not ``db.execute``: a Core statement run through the
    # ORM session still goes through its row loading (~1.5 µs a row here).
    conn = await db.connection()
    result = await conn.execute(query, params)
    rows: Sequence[FrameRow] = result.all()  # Rows (tuples) of FrameRow's columns
    return rows


async def view_rows(
    db: AsyncSession,
    session_id: str,
    where: MessageFilter,
    *,
    limit: int | None,
    raw: bool = False,
) -> Sequence[ViewRow]:
    """What ``list_messages`` returns for the same arguments, as rows of the Message
    view's columns (``ViewRow``), the JSON as text: a page of 500 messages as ORM objects
    cost ~16 µs a message of the request's CPU (the raw frame JSON-decoded too, asked for
    or not) before its JSON was written."""
    dialect = db.get_bind().dialect.name
    columns: list[Any] = [
        Message.id,
        Message.session_id,
        Message.run_id,
        Message.seq,
        Message.role,
        Message.step_number,
        _json_text(dialect, Message.content),
        _created(dialect),
    ]
    if raw:
        columns += [_json_text(dialect, Message.raw), Message.dropped]
    query = filtered(select(*columns), session_id, where, limit)
    conn = await db.connection()  # as frame_rows: no ORM row loading
    rows: Sequence[ViewRow] = (await conn.execute(query)).all()
    return rows
