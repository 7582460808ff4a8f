"""History as an event log: the transcript, fork (copy) and rewind (overwrite). The
archive format (export and import) is ``server.sessions.history.archive``.

Every stored message is an immutable event with a per-session ``seq``; the only thing
that ever changes on a stored message is its ``dropped`` flag (set by a rewind).
"""

from __future__ import annotations

import logging
import uuid

import anyio

from server.sessions.errors import Invalid, SessionNotActive, TurnInProgress
from server.sessions.live.transcript import ChatEntry, build_transcript
from server.sessions.records import get_record
from server.sessions.services import CLEANUP_SECONDS, Services
from server.sessions.supervision.processes import KeyedLocks
from server.sessions.supervision.status import status_draft
from server.sessions.supervision.supervisor import Supervisor
from server.sessions.workspaces import service as workspace_service
from store import Database, Message, SessionRecord, utcnow
from store import messages as message_store
from store.glance import fork_title
from store.messages import MessageValues
from store.operations import CopyMessages, DropMessages, SetStatus

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


async def session_transcript(
    database: Database, session_id: str, upto: int | None
) -> list[ChatEntry]:
    """The conversation up to ``upto`` (default: all), dropped messages left out."""
    record = await get_record(database, session_id)
    _check_seq(upto, record.last_seq, "uptoSeq")
    async with database.read() as db:
        rows = await message_store.list_messages(
            db, session_id, message_store.MessageFilter(upto=upto), limit=None
        )
    return build_transcript(rows)


# -- fork ----------------------------------------------------------------------------------


def _copy_row(message: Message, session_id: str, seq: int) -> MessageValues:
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
    supervisor: Supervisor, session_id: str, upto: int | None, title: str | None
) -> SessionRecord:
    """A new session on the same repository and agent holding copies of the source's
    messages up to ``upto`` (dropped ones left out; new ids, ``seq`` from 1, run ids
    cleared, original timestamps kept). Admission as for any new session (429); the
    agent starts fresh and gets the copied conversation as a preamble on its first
    prompt (the session is created with ``needs_context``)."""
    services = supervisor.services
    source = await get_record(services.db, session_id)
    upto = source.last_seq if upto is None else upto
    _check_seq(upto, source.last_seq, "uptoSeq")
    async with services.db.read() as db:
        originals = await message_store.list_messages(
            db, session_id, message_store.MessageFilter(upto=upto), limit=None
        )
    record = await supervisor.create_session(
        source.repo_id,
        source.agent_id,
        title if title is not None else fork_title(source.title),
        None,
        forked_from=(source.id, upto),
    )
    rows = [_copy_row(m, record.id, seq) for seq, m in enumerate(originals, start=1)]
    try:
        # A fork inherits its parent's controls and client tools; a title asked for is
        # the user's.
        title_source = "user" if title is not None else source.title_source
        copy = CopyMessages(
            record.id,
            rows,
            source.controls,
            source.agent_config,
            source.client_tools,
            title_source,
        )

        # Through the writer's transaction queue, before anything else can write to
        # the new session; its seqs then continue after the copies.
        await services.writer.submit(None, (), [copy]).wait()
        if rows:
            services.writer.open_session(record.id, len(rows))
    except BaseException:
        with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
            await _mark_error(services, record.id, "fork_failed")
        raise
    try:
        await workspace_service.make_fork_worktree(services, source, record, upto)
    except BaseException:
        with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
            await supervisor.end_session(record.id, "error", "worktree_failed")
        raise
    await supervisor.start_new(
        await get_record(services.db, record.id)
    )  # with the inherited controls
    log.info(
        "session forked",
        extra={"session_id": record.id, "forked_from": source.id, "seq": upto, "copied": len(rows)},
    )
    return await get_record(services.db, record.id)


async def _mark_error(services: Services, session_id: str, reason: str) -> None:
    set_error = SetStatus(session_id, "error", utcnow())
    await services.writer.submit(session_id, [status_draft("error", reason)], [set_error]).wait()


# -- rewind --------------------------------------------------------------------------------


async def rewind_session(
    supervisor: Supervisor,
    locks: KeyedLocks,
    session_id: str,
    to_seq: int,
    *,
    restore_files: bool = False,
) -> tuple[SessionRecord, int]:
    """Mark the messages after ``to_seq`` dropped, store a ``rewind`` status message (its
    ``seq`` after the highest ever used), and reset the agent's context so the next prompt
    starts a fresh agent with the remaining transcript. Returns the session and how many
    messages were dropped. Rewinds of one session run one at a time, so each counts
    exactly what it drops."""
    async with locks.hold(session_id):
        return await _rewind(supervisor, session_id, to_seq, restore_files)


async def _rewind(
    supervisor: Supervisor, session_id: str, to_seq: int, restore_files: bool = False
) -> tuple[SessionRecord, int]:
    services = supervisor.services
    record = await get_record(services.db, session_id)
    _check_seq(to_seq, record.last_seq, "toSeq")
    if record.status != "active":
        raise SessionNotActive(
            f"The session is {record.status}; only an active session can be rewound (fork "
            f"it instead).",
        )
    if supervisor.registry.turn_running(session_id):
        raise TurnInProgress()
    outcome: dict[str, int] = {}

    async def drop_and_announce() -> None:  # under the session lock: no agent starts meanwhile
        record = await get_record(services.db, session_id)
        if restore_files:
            await workspace_service.restore_for_rewind(services, record, to_seq)
        services.writer.open_session(session_id, record.last_seq)
        upto = services.writer.last_seq(session_id)
        async with services.db.read() as db:
            outcome["dropped"] = await message_store.count_live_between(
                db, session_id, to_seq, upto
            )
        announce = status_draft(
            "active", "rewind", {"toSeq": to_seq, "dropped": outcome["dropped"]}
        )
        drop = DropMessages(session_id, to_seq, upto, outcome["dropped"])

        await services.writer.submit(session_id, [announce], [drop]).wait()

    await supervisor.reset_context(
        session_id, during=drop_and_announce
    )  # 409 if a turn started meanwhile
    dropped = outcome["dropped"]
    log.info(
        "session rewound", extra={"session_id": session_id, "to_seq": to_seq, "dropped": dropped}
    )
    return await get_record(services.db, session_id), dropped
