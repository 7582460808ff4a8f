"""``Workspace.merged`` (API.md, Review): the session's branch went into another, when and
as which commit, kept on the session so that a review shows the merged state."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from server.stream.frames import iso
from store import sessions as session_store
from store import utcnow

if TYPE_CHECKING:
    from server.sessions.hub import Hub

__all__ = ["MergedState", "record_merged"]


class MergedState(TypedDict):
    commit: str | None
    into: str
    at: str


async def record_merged(hub: Hub, session_id: str, commit: str | None, into: str) -> None:
    """Store the merge that just went through (a later merge replaces it)."""
    at = iso(utcnow())
    assert at is not None
    state: MergedState = {"commit": commit, "into": into, "at": at}
    async with hub.db.write() as db, db.begin():
        await session_store.update_session(db, session_id, merged=dict(state))
