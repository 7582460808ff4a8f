"""``Workspace.merged`` (API.md, Review): the session's branch went into another, when and
as which commit, kept on the session so that a review shows the merged state."""

from __future__ import annotations

from typing import TypedDict

from server.stream.frames import iso
from server.stream.writer import Writer
from store import utcnow
from store.operations import SetMerged

__all__ = ["MergedState", "record_merged"]


class MergedState(TypedDict):
    commit: str | None
    into: str
    at: str


async def record_merged(writer: Writer, session_id: str, commit: str | None, into: str) -> None:
    """Store the merge that just went through (a later merge replaces it)."""
    at = iso(utcnow())
    assert at is not None
    state: MergedState = {"commit": commit, "into": into, "at": at}
    await writer.submit(None, (), [SetMerged(session_id, dict(state))]).wait()
