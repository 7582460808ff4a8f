"""What a person's review actions leave: a ``review`` message in the session's log (a
revert, a commit, a merge: API.md "Who did what"), and after a merge ``Workspace.merged``
(API.md, Review): the branch went into another, when and as which commit, kept on the
session so that a review shows the merged state."""

from collections.abc import Sequence
from typing import TypedDict

from agent_bridge.jsontypes import JsonObject
from server.stream.frames import iso
from server.stream.writer import Draft, Writer
from store import SessionRecord, utcnow
from store.operations import SetMerged, WriteOp

__all__ = ["MergedState", "merged_state", "record_review"]


class MergedState(TypedDict):
    commit: str | None
    into: str
    at: str


def merged_state(session_id: str, commit: str | None, into: str) -> SetMerged:
    """The merge that just went through, to store (a later merge replaces it)."""
    at = iso(utcnow())
    assert at is not None
    state: MergedState = {"commit": commit, "into": into, "at": at}
    return SetMerged(session_id, dict(state))


async def record_review(
    writer: Writer, record: SessionRecord, content: JsonObject, ops: Sequence[WriteOp] = ()
) -> None:
    """Store the ``review`` message ``content`` (and ``ops``, in its transaction)."""
    writer.open_session(record.id, record.last_seq)
    await writer.submit(record.id, [Draft("system", content)], ops).wait()
