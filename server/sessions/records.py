"""Reading a session's stored record, with the domain's NotFound for an unknown id."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from server.sessions.errors import NotFound
from store import Database, SessionRecord
from store import sessions as session_store

__all__ = ["get_record"]


async def get_record(
    database: Database, session_id: str, db: AsyncSession | None = None
) -> SessionRecord:
    """The session (NotFound when there is none), read in ``db`` or a transaction of its own."""
    if db is None:
        async with database.read() as db:
            return await get_record(database, session_id, db)
    record = await session_store.get_session(db, session_id)
    if record is None:
        raise NotFound("session", session_id)
    return record
