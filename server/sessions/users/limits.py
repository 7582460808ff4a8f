"""MAX_SESSIONS_PER_USER: how many active sessions one user may have at once."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from server import metrics
from server.sessions.errors import LimitReached
from server.settings import Settings
from store import SessionRecord
from store import users as user_store

__all__ = ["refuse_over_user_limit"]


async def refuse_over_user_limit(
    settings: Settings, db: AsyncSession, record: SessionRecord
) -> None:
    """In the admission's transaction, after the new session's insert (the admission lock
    held, so concurrent creates count one another): refuse it when its owner now has more
    than the limit; raising rolls the insert back."""
    limit = settings.max_sessions_per_user
    if limit is None or record.owner_id is None:
        return
    if await user_store.count_active_sessions_of(db, record.owner_id) > limit:
        metrics.refused()
        raise LimitReached(  # the edge adds Retry-After: 60
            "user_session_limit_reached",
            f"You already have your limit of {limit} active sessions. "
            "Complete one (or wait for one to finish) and try again in a minute.",
            {"limit": limit},
        )
