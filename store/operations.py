"""The writes the session domain asks the writer for, as typed values. The writer runs
each in the transaction that stores the messages submitted with it (after their insert),
by calling it with that transaction's ``AsyncSession``; an op never commits.

Each kind of write is one small frozen class here, so what a receipt will do to the
database is data that can be read, compared and tested, not a closure. The hot path's
tool-call ops (``ToolCallInsert``, ``ToolCallUpdate``) are ``store.hot_writes``'."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from store import attachments as attachment_store
from store import glance as glance_store
from store import messages as message_store
from store import permissions as permission_store
from store import runs as run_store
from store import sessions as session_store
from store.hot_batch import ToolCallInsert, ToolCallUpdate
from store.jsontypes import JsonObject, JsonValue
from store.models import Attachment, Run, SessionRecord

__all__ = [
    "CancelQueued",
    "CloseRun",
    "CopyMessages",
    "DecidePermission",
    "DeleteSession",
    "DropMessages",
    "ImportSession",
    "InsertPermission",
    "InterruptRun",
    "KeepAttachments",
    "OpenRun",
    "SetClientTools",
    "PurgeSession",
    "QueueRun",
    "SetKept",
    "SetMerged",
    "SetStatus",
    "SetTitle",
    "StoreControls",
    "TitleFromPrompt",
    "WriteOp",
]

log = logging.getLogger("agent_sessions.history")


class SetTitle(msgspec.Struct, frozen=True):
    """The agent named its session (``session_info_update``): it replaces a title taken
    from a prompt or an earlier one of the agent's, never one a person gave."""

    session_id: str
    title: str

    async def __call__(self, db: AsyncSession) -> None:
        await glance_store.set_agent_title(db, self.session_id, self.title)


class TitleFromPrompt(msgspec.Struct, frozen=True):
    """A session still without a title takes its first prompt's."""

    session_id: str
    text: str

    async def __call__(self, db: AsyncSession) -> None:
        await glance_store.set_prompt_title(db, self.session_id, self.text)


class SetKept(msgspec.Struct, frozen=True):
    """What a person keeps of a session (PATCH): a title (then the user's), its
    visibility, archived or not; None leaves it as it is."""

    session_id: str
    title: str | None = None
    visibility: str | None = None
    archived: bool | None = None

    async def __call__(self, db: AsyncSession) -> None:
        values: dict[str, Any] = {}
        if self.title is not None:
            values.update(title=self.title, title_source="user")
        if self.visibility is not None:
            values["visibility"] = self.visibility
        if self.archived is not None:
            values["archived"] = self.archived
        if values:
            await session_store.update_session(db, self.session_id, **values)


class PurgeSession(msgspec.Struct, frozen=True):
    """Every row an ended session owns, in one transaction (its git state is gone
    already); a session revived meanwhile is left whole."""

    session_id: str

    async def __call__(self, db: AsyncSession) -> None:
        current = await session_store.get_session(db, self.session_id)
        if current is None or current.status == "active":
            return
        await glance_store.purge_rows(db, self.session_id)


class SetStatus(msgspec.Struct, frozen=True):
    """A status change (the session has no running run any more)."""

    session_id: str
    status: str
    when: datetime

    async def __call__(self, db: AsyncSession) -> None:
        await session_store.update_session(
            db, self.session_id, status=self.status, updated_at=self.when, active_run_id=None
        )


class SetMerged(msgspec.Struct, frozen=True):
    """The session's branch went into another: ``{commit, into, at}`` of that merge, kept
    as ``Workspace.merged`` (a later merge replaces it)."""

    session_id: str
    merged: JsonObject

    async def __call__(self, db: AsyncSession) -> None:
        await session_store.update_session(db, self.session_id, merged=self.merged)


class SetClientTools(msgspec.Struct, frozen=True):
    """The client tools a session registered (API.md "Client tools"; None: none)."""

    session_id: str
    tools: JsonValue

    async def __call__(self, db: AsyncSession) -> None:
        await session_store.update_session(db, self.session_id, client_tools=self.tools)


class DeleteSession(msgspec.Struct, frozen=True):
    """A session refused after its agent started: it was never created."""

    session_id: str

    async def __call__(self, db: AsyncSession) -> None:
        await session_store.delete_session(db, self.session_id)


class StoreControls(msgspec.Struct, frozen=True):
    """The session's controls as they are when the op runs (``view()``), and the kept
    choices (``agent_config``) as ``merge`` makes them from the stored ones (None: kept
    as they are)."""

    session_id: str
    view: Callable[[], JsonObject]
    merge: Callable[[object], JsonObject] | None = None

    async def __call__(self, db: AsyncSession) -> None:
        values: dict[str, Any] = {"controls": self.view()}
        if self.merge is not None:
            record = await session_store.get_session(db, self.session_id)
            values["agent_config"] = self.merge(record.agent_config if record else None)
        await session_store.update_session(db, self.session_id, **values)


class KeepAttachments(msgspec.Struct, frozen=True):
    """A prompt's images and files, each kept once per session."""

    attachments: Sequence[Attachment]

    async def __call__(self, db: AsyncSession) -> None:
        await attachment_store.keep_attachments(db, self.attachments)


class OpenRun(msgspec.Struct, frozen=True):
    """A turn's run, now the session's active one (its context handed over).
    ``queued``: the run's row exists (status ``queued``) and becomes the running one."""

    run: Run
    queued: bool = False

    async def __call__(self, db: AsyncSession) -> None:
        if self.queued:
            await db.merge(self.run)
        else:
            db.add(self.run)
        await db.flush()
        await session_store.update_session(
            db, self.run.session_id, active_run_id=self.run.id, needs_context=False
        )


class QueueRun(msgspec.Struct, frozen=True):
    """A prompt waiting for the running turn: its run, status ``queued``."""

    run: Run

    async def __call__(self, db: AsyncSession) -> None:
        db.add(self.run)
        await db.flush()


class CancelQueued(msgspec.Struct, frozen=True):
    """Queued runs that will never start end ``cancelled`` (a started one is left)."""

    run_ids: Sequence[str]
    when: datetime

    async def __call__(self, db: AsyncSession) -> None:
        if self.run_ids:
            await glance_store.cancel_queued(db, self.run_ids, self.when)


class CloseRun(msgspec.Struct, frozen=True):
    """A turn's end: the run's final columns; the session has no active run."""

    session_id: str
    run_id: str
    values: dict[str, Any]

    async def __call__(self, db: AsyncSession) -> None:
        await run_store.update_run(db, self.run_id, **self.values)
        await session_store.update_session(db, self.session_id, active_run_id=None)


class InterruptRun(msgspec.Struct, frozen=True):
    """Recovery: a run whose agent is gone ends ``interrupted``."""

    session_id: str
    run_id: str
    when: datetime
    duration_ms: int

    async def __call__(self, db: AsyncSession) -> None:
        await run_store.update_run(
            db,
            self.run_id,
            status="interrupted",
            completed_at=self.when,
            duration_ms=self.duration_ms,
            error_message="the server stopped during this run",
        )
        await session_store.update_session(db, self.session_id, active_run_id=None)


class InsertPermission(msgspec.Struct, frozen=True):
    """A permission request the agent asked, not decided yet."""

    request_id: str
    session_id: str
    run_id: str | None
    tool_call_id: str | None
    options: JsonValue
    when: datetime

    async def __call__(self, db: AsyncSession) -> None:
        await permission_store.insert_permission(
            db,
            self.request_id,
            self.session_id,
            self.run_id,
            self.tool_call_id,
            self.options,
            self.when,
        )


class DecidePermission(msgspec.Struct, frozen=True):
    """A permission's outcome (unless one is recorded already)."""

    request_id: str
    outcome: JsonObject
    when: datetime

    async def __call__(self, db: AsyncSession) -> None:
        await permission_store.decide_permission(db, self.request_id, self.outcome, self.when)


class CopyMessages(msgspec.Struct, frozen=True):
    """A fork's copied messages, its seqs from 1, the controls and client tools it
    inherits, and where its title came from."""

    session_id: str
    rows: Sequence[message_store.MessageValues]
    controls: JsonValue
    agent_config: JsonValue
    client_tools: JsonValue = None
    title_source: str | None = None

    async def __call__(self, db: AsyncSession) -> None:
        if self.rows:
            await message_store.insert_messages(db, self.rows)
        await session_store.update_session(
            db,
            self.session_id,
            last_seq=len(self.rows),
            controls=self.controls,
            agent_config=self.agent_config,
            client_tools=self.client_tools,
            title_source=self.title_source,
        )


class DropMessages(msgspec.Struct, frozen=True):
    """A rewind: the messages after ``after`` up to ``upto`` are dropped (``announced``
    of them, as its status message said), and the next prompt hands over the context."""

    session_id: str
    after: int
    upto: int
    announced: int

    async def __call__(self, db: AsyncSession) -> None:
        count = await message_store.drop_between(db, self.session_id, self.after, self.upto)
        if count != self.announced:
            log.warning(
                "rewind dropped %d messages, announced %d",
                count,
                self.announced,
                extra={"session_id": self.session_id},
            )
        await session_store.update_session(db, self.session_id, needs_context=True)


class ImportSession(msgspec.Struct, frozen=True):
    """An imported archive: the session and every message as it was, and the images its
    prompts carried (their raw frames hold the bytes), kept as the session's again."""

    record: SessionRecord
    rows: Sequence[message_store.MessageValues] = msgspec.field(default_factory=list)
    attachments: Sequence[Attachment] = ()

    async def __call__(self, db: AsyncSession) -> None:
        db.add(self.record)
        await db.flush()
        await message_store.insert_messages(db, self.rows)
        if self.attachments:
            await attachment_store.keep_attachments(db, self.attachments)


WriteOp = (
    SetTitle
    | TitleFromPrompt
    | SetKept
    | PurgeSession
    | SetStatus
    | SetMerged
    | SetClientTools
    | DeleteSession
    | StoreControls
    | KeepAttachments
    | OpenRun
    | QueueRun
    | CancelQueued
    | CloseRun
    | InterruptRun
    | InsertPermission
    | DecidePermission
    | CopyMessages
    | DropMessages
    | ImportSession
    | ToolCallInsert
    | ToolCallUpdate
)
"""Every kind of write the writer runs beside messages."""
