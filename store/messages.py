"""The append-only message log. Inserts go through Core executemany (the ORM's
``add_all`` does not batch on SQLite)."""

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypedDict, cast

import msgspec
from sqlalchemy import Select, Table, func, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from store.jsontypes import JsonObject, JsonValue
from store.models import Message, SessionRecord
from store.search import FTS_ADD, index_final_texts

__all__ = [
    "Asked",
    "MessageFilter",
    "MessageValues",
    "asked_elicitation",
    "pending_elicitations",
    "unanswered",
    "count_live_between",
    "drop_between",
    "drop_messages_after",
    "filtered",
    "get_message",
    "last_of_type",
    "insert_messages",
    "list_messages",
    "max_seq",
]


class MessageFilter(msgspec.Struct, frozen=True):
    after: int = 0
    since: datetime | None = None
    role: str | None = None
    type: str | None = None
    partial: bool | None = None  # None: both; False: finished messages only
    run_id: str | None = None
    upto: int | None = None
    include_dropped: bool = False


class MessageValues(TypedDict):
    """A message's columns as SQLAlchemy binds them, for ``insert_messages``: the JSON
    decoded, ``created_at`` a datetime. The writer's rows, and every row read back, are
    ``store.message_row.MessageRow`` (JSON as text); this is for the copies the domain
    makes through the ORM (a fork, an imported archive)."""

    id: str
    session_id: str
    seq: int
    run_id: str | None
    step_number: int | None
    role: str
    type: str
    partial: bool
    dropped: bool
    content: JsonObject  # the server's message content (server.contents)
    raw: JsonObject | None  # the ACP frame it came from
    created_at: datetime


async def insert_messages(db: AsyncSession, rows: Sequence[Mapping[str, object]]) -> None:
    """Insert message rows (``MessageValues``, or the writer's dicts of the same columns)
    in one statement."""
    if rows:
        # Core executemany on the table: insert(Message) would take the ORM's bulk path,
        # which works per row.
        table: Table = Message.__table__  # type: ignore[assignment] # declarative tables are Tables
        await db.execute(insert(table), list(rows))
        if db.get_bind().dialect.name == "sqlite":  # PostgreSQL's GIN index keeps itself
            finals = index_final_texts(rows)
            if finals:
                await db.execute(text(FTS_ADD), finals)


async def max_seq(db: AsyncSession, session_id: str) -> int:
    query = select(func.coalesce(func.max(Message.seq), 0)).where(Message.session_id == session_id)
    return int((await db.execute(query)).scalar_one())


async def last_of_type(db: AsyncSession, session_id: str, kind: str) -> Message | None:
    """The session's latest non-dropped message of content type ``kind``."""
    query = (
        select(Message)
        .where(Message.session_id == session_id, Message.type == kind, Message.dropped.is_(False))
        .order_by(Message.seq.desc())
        .limit(1)
    )
    return (await db.execute(query)).scalar_one_or_none()


async def asked_elicitation(db: AsyncSession, session_id: str, request_id: str) -> bool:
    """Whether the session's log holds elicitation ``request_id`` (dropped ones too)."""
    query = select(Message.content).where(
        Message.session_id == session_id, Message.type == "elicitation"
    )
    contents = (await db.execute(query)).scalars()
    return any(c.get("requestId") == request_id for c in contents if isinstance(c, dict))


class Asked(msgspec.Struct, frozen=True):
    """A request an agent asked in the log (an elicitation, a client tool call) that has
    no outcome stored yet."""

    session_id: str
    seq: int
    run_id: str | None
    content: JsonObject


# literals, not bound parameters: SQLite uses a partial index only for a query whose
# WHERE has the index's own term (``ix_messages_elicitation``, ``ix_messages_client_tool``)
_ASKED_TYPES = {
    "elicitation": text("messages.type = 'elicitation'"),
    "client_tool": text("messages.type = 'client_tool'"),
}


async def unanswered(db: AsyncSession, kind: str, key: str, session_id: str | None) -> list[Asked]:
    """The ``kind`` requests (told apart by their ``key``: ``requestId``, ``callId``)
    whose latest message has no outcome: of one session, or of every session (``None``),
    read through the partial index with the table's own columns (start-up recovery: no
    ORM mapper configured, no ORM statement compiled)."""
    t = Message.__table__.c
    query = select(t.session_id, t.seq, t.run_id, t.content).where(_ASKED_TYPES[kind])
    if session_id is not None:
        query = query.where(t.session_id == session_id)
    latest: dict[tuple[str, JsonValue], Asked] = {}  # by session and request, as stored
    for row in await db.execute(query.order_by(t.session_id, t.seq)):
        asked = Asked(*row)
        latest[asked.session_id, asked.content.get(key)] = asked
    return [a for a in latest.values() if a.content.get("outcome") is None]


async def pending_elicitations(db: AsyncSession, session_id: str | None) -> list[Asked]:
    """The elicitations still waiting for an answer (of one session, or of all)."""
    return await unanswered(db, "elicitation", "requestId", session_id)


async def get_message(db: AsyncSession, message_id: str) -> Message | None:
    return await db.get(Message, message_id)


async def list_messages(
    db: AsyncSession, session_id: str | None, where: MessageFilter, *, limit: int | None
) -> Sequence[Message]:
    query = filtered(select(Message), session_id, where, limit)
    return cast(Sequence[Message], (await db.execute(query)).scalars().all())


def filtered(
    query: Select[Any], session_id: str | None, where: MessageFilter, limit: int | None
) -> Select[Any]:
    """``query`` (of messages: objects or columns) narrowed by ``where``, in seq order."""
    if session_id is not None:
        query = query.where(Message.session_id == session_id)
    if where.run_id is not None:
        query = query.where(Message.run_id == where.run_id)
    query = query.where(Message.seq > where.after)
    if where.upto is not None:
        query = query.where(Message.seq <= where.upto)
    if not where.include_dropped:
        query = query.where(Message.dropped.is_(False))
    if where.since is not None:
        query = query.where(Message.created_at > where.since)
    if where.role:
        query = query.where(Message.role == where.role)
    if where.type:
        query = query.where(Message.type == where.type)
    if where.partial is False:
        query = query.where(Message.partial.is_(False))
    query = query.order_by(Message.seq)
    if limit is not None:
        query = query.limit(limit)
    return query


async def drop_messages_after(db: AsyncSession, session_id: str, seq: int) -> int:
    result = await db.execute(
        update(Message)
        .where(Message.session_id == session_id, Message.seq > seq, Message.dropped.is_(False))
        .values(dropped=True)
    )
    await db.execute(
        update(SessionRecord).where(SessionRecord.id == session_id).values(needs_context=True)
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


async def count_live_between(db: AsyncSession, session_id: str, after: int, upto: int) -> int:
    """How many messages with ``after < seq <= upto`` are not dropped."""
    query = select(func.count()).where(
        Message.session_id == session_id,
        Message.seq > after,
        Message.seq <= upto,
        Message.dropped.is_(False),
    )
    return int((await db.execute(query)).scalar_one())


async def drop_between(db: AsyncSession, session_id: str, after: int, upto: int) -> int:
    """``drop_messages_after`` bounded above (a rewind's own status message, stored in the
    same transaction, stays); how many it dropped."""
    result = await db.execute(
        update(Message)
        .where(
            Message.session_id == session_id,
            Message.seq > after,
            Message.seq <= upto,
            Message.dropped.is_(False),
        )
        .values(dropped=True)
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]
