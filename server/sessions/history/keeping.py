"""Keeping sessions (API.md, Finding and keeping sessions): renaming, archiving and
purging. Archived sessions stay whole and leave the default list; a purge removes the
session for good: its git state first (worktree, checkpoint refs, branch unless kept),
then every row it owns in one transaction, so a failure half-way leaves rows that can be
purged again rather than rows pointing at nothing."""

from __future__ import annotations

import logging
from pathlib import Path

from server.sessions.errors import Conflict
from server.sessions.records import get_record
from server.sessions.services import Services
from server.sessions.workspaces import checkpoints, worktrees
from server.sessions.workspaces.service import in_thread, session_lock
from store import SessionRecord
from store import repos as repo_store
from store import sessions as session_store
from store.operations import PurgeSession, SetKept

__all__ = ["Purged", "patch_session", "purge_session"]

log = logging.getLogger("agent_sessions.keeping")


def _ended(record: SessionRecord, doing: str) -> None:
    if record.status == "active":
        raise Conflict(
            "session_active", f"The session is active; complete or delete it before {doing}."
        )


async def patch_session(
    services: Services,
    session_id: str,
    *,
    title: str | None,
    visibility: str | None,
    archived: bool | None,
) -> SessionRecord:
    """Rename (the title becomes the user's), share, archive or bring back."""
    record = await get_record(services.db, session_id)
    if archived is True and not record.archived:
        _ended(record, "archiving it")
    if visibility is not None and not hasattr(SessionRecord, "visibility"):
        raise Conflict("not_supported", "This server has no users: visibility has no effect.")
    kept = SetKept(
        session_id,
        title=title.strip() if title is not None else None,
        visibility=visibility,
        archived=archived,
    )
    await services.writer.submit(None, (), [kept]).wait()
    return await get_record(services.db, session_id)


class Purged:
    """What a purge removed (for the log line)."""

    def __init__(self, worktree: bool, refs: int, branch: str | None) -> None:
        self.worktree, self.refs, self.branch = worktree, refs, branch


def _remove_git(repo: Path, record: SessionRecord, keep_branch: bool) -> Purged:
    if not repo.is_dir():
        return Purged(False, 0, None)
    worktree = record.isolation == "worktree" and bool(record.workspace_path)
    branch = None if keep_branch or not worktree else record.branch
    if worktree:
        worktrees.remove_worktree(repo, Path(record.workspace_path or ""), branch)
    if not (repo / ".git").exists():
        return Purged(worktree, 0, branch)
    refs = checkpoints.delete_refs(repo, record.id)
    return Purged(worktree, refs, branch)


async def purge_session(services: Services, session_id: str, *, keep_branch: bool) -> None:
    """The ended session gone for good (409 ``session_active`` while it is active)."""
    record = await get_record(services.db, session_id)
    _ended(record, "purging it")
    async with services.db.read() as db:
        repo = await repo_store.get_repo(db, record.repo_id)
    async with session_lock(services.writer, session_id):
        purged = (
            await in_thread(_remove_git, Path(repo.path), record, keep_branch)
            if repo is not None
            else Purged(False, 0, None)
        )
        # the op leaves a session revived meanwhile whole
        await services.writer.submit(None, (), [PurgeSession(session_id)]).wait()
    async with services.db.read() as db:
        left = await session_store.get_session(db, session_id)
    if left is not None:
        _ended(left, "purging it")  # revived meanwhile: 409, its rows kept
    log.info(
        "session purged",
        extra={
            "session_id": session_id,
            "worktree": purged.worktree,
            "refs": purged.refs,
            "branch": purged.branch,
        },
    )
