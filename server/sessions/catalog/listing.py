"""Sessions as listed and shown: the list page, one session with its repository (and its
messages), message pages, and the WebSocket's replay pages."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from server.sessions.records import get_record
from store import Database, Repo, SessionRecord
from store import messages as message_store
from store import replay as replay_store
from store import repos as repo_store
from store import sessions as session_store
from store.message_row import MessageRow

__all__ = ["Listing", "SessionPage"]


class SessionPage(msgspec.Struct, frozen=True):
    """A session, its repository and (when asked for) messages, read in one snapshot."""

    record: SessionRecord
    repo: Repo
    rows: Sequence[MessageRow] = ()


async def _repo(db: AsyncSession, record: SessionRecord) -> Repo:
    repo = await repo_store.get_repo(db, record.repo_id)
    assert repo is not None  # a repository with sessions is never deleted
    return repo


class Listing:
    """Each method reads in one transaction: a request reads in one, because each read
    transaction through the ORM and aiosqlite costs a measurable share of a request
    (bench/results/notes.md)."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def record(self, session_id: str) -> SessionRecord | None:
        """The session's record, or None: what an access check reads (owner, visibility)."""
        async with self.database.read() as db:
            return await session_store.get_session(db, session_id)

    async def sessions(
        self,
        where: session_store.SessionFilter,
        *,
        limit: int,
        offset: int,
        before: tuple[datetime, str] | None,
    ) -> tuple[Sequence[SessionRecord], int, dict[str, Repo]]:
        """A page of sessions (at most ``limit``), the total matching, and the
        repositories by id."""
        async with self.database.read() as db:
            rows, total = await session_store.list_sessions(
                db, where, limit=limit, offset=offset, before=before
            )
            repos = {r.id: r for r in await repo_store.list_repos(db)}
        return rows, total, repos

    async def repo_of(self, record: SessionRecord) -> Repo:
        """The session's repository (to show a session the domain returned)."""
        async with self.database.read() as db:
            return await _repo(db, record)

    async def session(self, session_id: str) -> SessionPage:
        """The session (NotFound), its repository and its whole messages."""
        async with self.database.read() as db:
            record = await get_record(self.database, session_id, db)
            repo = await _repo(db, record)
            rows = await replay_store.view_rows(
                db, record.id, message_store.MessageFilter(partial=False), limit=None
            )
        return SessionPage(record, repo, rows)

    async def messages(
        self, session_id: str, where: message_store.MessageFilter, *, limit: int, raw: bool
    ) -> Sequence[MessageRow]:
        """A page of the session's messages (NotFound for an unknown session)."""
        async with self.database.read() as db:
            await get_record(self.database, session_id, db)
            return await replay_store.view_rows(db, session_id, where, limit=limit, raw=raw)

    async def first_replay(self, session_id: str, after: int, *, limit: int) -> SessionPage:
        """A viewer's connect: the session, its repository and the first replay page, in
        one read transaction (one snapshot); a connect is mostly its reads."""
        async with self.database.read() as db:
            record = await get_record(self.database, session_id, db)
            repo = await _repo(db, record)
            rows = await replay_store.frame_rows(db, session_id, after, limit=limit)
        return SessionPage(record, repo, rows)

    async def replay(self, session_id: str, after: int, *, limit: int) -> Sequence[MessageRow]:
        """The next replay page after ``after``."""
        async with self.database.read() as db:
            return await replay_store.frame_rows(db, session_id, after, limit=limit)
