"""Client tool calls in the message log (API.md "Client tools"): a call is a
``client_tool`` message with ``outcome`` null, and its ending a second one with the
outcome. They never commit: the caller owns the transaction."""

from __future__ import annotations

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from store.messages import Asked, unanswered
from store.models import Message

__all__ = ["asked_call", "pending_calls"]


async def pending_calls(db: AsyncSession, session_id: str | None) -> list[Asked]:
    """The calls with no outcome stored yet: of one session, or of every session (``None``;
    through the partial index ``ix_messages_client_tool``)."""
    return await unanswered(db, "client_tool", "callId", session_id)


async def asked_call(db: AsyncSession, session_id: str, call_id: str) -> bool:
    """Whether the session's log holds call ``call_id`` (dropped messages too)."""
    query = select(Message.content).where(
        text("messages.type = 'client_tool'"), Message.session_id == session_id
    )
    return any(
        isinstance(c, dict) and c.get("callId") == call_id
        for c in (await db.execute(query)).scalars()
    )
