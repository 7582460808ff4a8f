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
from sqlalchemy.ext.asyncio import AsyncSession

from store.models import Message

__all__ = ["FrameRow", "frame_rows"]

# (id, run_id, seq, role, step_number, content as JSON text, created_at): created_at is
# SQLite's stored text (``YYYY-MM-DD HH:MM:SS.ffffff``, UTC) or, on PostgreSQL, an aware
# UTC datetime.
FrameRow = tuple[str, str | None, int, str, int | None, str, str | datetime]

_QUERIES: dict[tuple[str, bool], Select[Any]] = {}


def _query(dialect: str, bounded: bool) -> Select[Any]:
    """The page query for ``dialect`` (built once: bound parameters only)."""
    key = (dialect, bounded)
    query = _QUERIES.get(key)
    if query is None:
        if dialect == "sqlite":
            # Stored as text: read it as text (no JSON decoding, no datetime parsing).
            content: Any = type_coerce(Message.content, String)
            created: Any = type_coerce(Message.created_at, String)
        else:
            content, created = cast(Message.content, Text), Message.created_at
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
