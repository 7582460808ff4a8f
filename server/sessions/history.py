"""History as an event log: the transcript, fork (copy) and rewind (overwrite). The
archive format (export and import) is ``server.sessions.archive``.

Every stored message is an immutable event with a per-session ``seq``; the only thing
that ever changes on a stored message is its ``dropped`` flag (set by a rewind).
"""

from __future__ import annotations

import logging
import uuid
import weakref
from collections import defaultdict
from typing import TYPE_CHECKING

import anyio
from sqlalchemy.ext.asyncio import AsyncSession

from server.sessions.errors import Invalid, SessionNotActive, TurnInProgress
from server.sessions.services import CLEANUP_SECONDS
from server.sessions.status import status_draft
from server.sessions.transcript import ChatEntry, build_transcript
from server.sessions.workspaces import service as workspace_service
from store import Message, SessionRecord, utcnow
from store import messages as message_store
from store import sessions as session_store
from store.glance import fork_title
from store.messages import MessageRow

if TYPE_CHECKING:
    from server.sessions.hub import Hub

__all__ = ["fork_session", "rewind_session", "session_transcript"]

log = logging.getLogger("agent_sessions.history")


def _check_seq(value: int | None, last_seq: int, name: str) -> None:
    if value is not None and not 0 <= value <= last_seq:
        raise Invalid(
            f"{name} must be between 0 and the session's last seq ({last_seq}); got {value}.",
            field=name,
            lastSeq=last_seq,
        )


# -- transcript ----------------------------------------------------------------------------


async def session_transcript(hub: Hub, session_id: str, upto: int | None) -> list[ChatEntry]:
    """The conversation up to ``upto`` (default: all), dropped messages left out."""
    record = await hub.get_record(session_id)
    _check_seq(upto, record.last_seq, "uptoSeq")
    async with hub.db.read() as db:
        rows = await message_store.list_messages(
            db, session_id, message_store.MessageFilter(upto=upto), limit=None
        )
    return build_transcript(rows)


# -- fork ----------------------------------------------------------------------------------


def _copy_row(message: Message, session_id: str, seq: int) -> MessageRow:
    return {
        "id": str(uuid.uuid4()),
        "session_id": session_id,
        "seq": seq,
        "run_id": None,
        "step_number": message.step_number,
        "role": message.role,
        "type": message.type,
        "partial": message.partial,
        "dropped": False,
        "content": message.content,
        "raw": message.raw,
        "created_at": message.created_at,
    }


async def fork_session(
    hub: Hub, session_id: str, upto: int | None, title: str | None
) -> SessionRecord:
    """A new session on the same repository and agent holding copies of the source's
    messages up to ``upto`` (dropped ones left out; new ids, ``seq`` from 1, run ids
    cleared, original timestamps kept). Admission as for any new session (429); the
    agent starts fresh and gets the copied conversation as a preamble on its first
    prompt (the session is created with ``needs_context``)."""
    source = await hub.get_record(session_id)
    upto = source.last_seq if upto is None else upto
    _check_seq(upto, source.last_seq, "uptoSeq")
    async with hub.db.read() as db:
        originals = await message_store.list_messages(
            db, session_id, message_store.MessageFilter(upto=upto), limit=None
        )
    record = await hub.create_session(
        source.repo_id,
        source.agent_id,
        title if title is not None else fork_title(source.title),
        None,
        forked_from=(source.id, upto),
    )
    rows = [_copy_row(m, record.id, seq) for seq, m in enumerate(originals, start=1)]
    try:

        async def copy(db: AsyncSession) -> None:
            if rows:
                await message_store.insert_messages(db, rows)
            await session_store.update_session(
                db,
                record.id,
                last_seq=len(rows),
                controls=source.controls,  # a fork inherits its parent's controls
                agent_config=source.agent_config,
                title_source="user" if title is not None else source.title_source,
            )

        # Through the writer's transaction queue, before anything else can write to
        # the new session; its seqs then continue after the copies.
        await hub.writer.submit(None, (), [copy]).wait()
        if rows:
            hub.writer.open_session(record.id, len(rows))
    except BaseException:
        with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
            await _mark_error(hub, record.id, "fork_failed")
        raise
    await workspace_service.make_fork_worktree(hub, source, record, upto)
    await hub.start_new(await hub.get_record(record.id))  # with the inherited controls
    log.info(
        "session forked",
        extra={"session_id": record.id, "forked_from": source.id, "seq": upto, "copied": len(rows)},
    )
    return await hub.get_record(record.id)


async def _mark_error(hub: Hub, session_id: str, reason: str) -> None:
    async def set_error(db: AsyncSession) -> None:
        await session_store.update_session(db, session_id, status="error", updated_at=utcnow())

    await hub.writer.submit(session_id, [status_draft("error", reason)], [set_error]).wait()


# -- rewind --------------------------------------------------------------------------------


_rewind_locks: weakref.WeakKeyDictionary[Hub, defaultdict[str, anyio.Lock]] = (
    weakref.WeakKeyDictionary()
)


async def rewind_session(
    hub: Hub, session_id: str, to_seq: int, *, restore_files: bool = False
) -> tuple[SessionRecord, int]:
    """Mark the messages after ``to_seq`` dropped, store a ``rewind`` status message (its
    ``seq`` after the highest ever used), and reset the agent's context so the next prompt
    starts a fresh agent with the remaining transcript. Returns the session and how many
    messages were dropped. Rewinds of one session run one at a time, so each counts
    exactly what it drops."""
    lock = _rewind_locks.setdefault(hub, defaultdict(anyio.Lock))[session_id]
    async with lock:
        return await _rewind(hub, session_id, to_seq, restore_files)


async def _rewind(
    hub: Hub, session_id: str, to_seq: int, restore_files: bool = False
) -> tuple[SessionRecord, int]:
    record = await hub.get_record(session_id)
    _check_seq(to_seq, record.last_seq, "toSeq")
    if record.status != "active":
        raise SessionNotActive(
            f"The session is {record.status}; only an active session can be rewound (fork "
            f"it instead).",
        )
    live = hub.live.get(session_id)
    if live is not None and live.turn is not None:
        raise TurnInProgress()
    outcome: dict[str, int] = {}

    async def drop_and_announce() -> None:  # under the session lock: no agent starts meanwhile
        record = await hub.get_record(session_id)
        if restore_files:
            await workspace_service.restore_for_rewind(hub, record, to_seq)
        hub.writer.open_session(session_id, record.last_seq)
        upto = hub.writer.last_seq(session_id)
        async with hub.db.read() as db:
            outcome["dropped"] = await message_store.count_live_between(
                db, session_id, to_seq, upto
            )
        announce = status_draft(
            "active", "rewind", {"toSeq": to_seq, "dropped": outcome["dropped"]}
        )

        async def drop(db: AsyncSession) -> None:
            count = await message_store.drop_between(db, session_id, to_seq, upto)
            if count != outcome["dropped"]:
                log.warning(
                    "rewind dropped %d messages, announced %d",
                    count,
                    outcome["dropped"],
                    extra={"session_id": session_id},
                )
            await session_store.update_session(db, session_id, needs_context=True)

        await hub.writer.submit(session_id, [announce], [drop]).wait()

    await hub.reset_context(session_id, during=drop_and_announce)  # 409 if a turn started meanwhile
    dropped = outcome["dropped"]
    log.info(
        "session rewound", extra={"session_id": session_id, "to_seq": to_seq, "dropped": dropped}
    )
    return await hub.get_record(session_id), dropped
