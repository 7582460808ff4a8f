"""Keeping sessions (API.md, Finding and keeping sessions): renaming, archiving and
purging. Archived sessions stay whole and leave the default list; a purge removes the
session for good: its git state first (worktree, checkpoint refs, branch unless kept),
then every row it owns in one transaction, so a failure half-way leaves rows that can be
purged again rather than rows pointing at nothing."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.sessions.errors import Conflict
from server.sessions.workspaces import worktrees
from server.sessions.workspaces.git import run_git
from server.sessions.workspaces.service import in_thread, session_lock
from store import SessionRecord
from store import glance as glance_store
from store import repos as repo_store
from store import sessions as session_store

if TYPE_CHECKING:
    from server.sessions.hub import Hub

__all__ = ["Purged", "patch_session", "purge_session"]

log = logging.getLogger("agent_sessions.keeping")


def _ended(record: SessionRecord, doing: str) -> None:
    if record.status == "active":
        raise Conflict(
            "session_active", f"The session is active; complete or delete it before {doing}."
        )


async def patch_session(
    hub: Hub,
    session_id: str,
    *,
    title: str | None,
    visibility: str | None,
    archived: bool | None,
) -> SessionRecord:
    """Rename (the title becomes the user's), share, archive or bring back."""
    record = await hub.get_record(session_id)
    values: dict[str, Any] = {}
    if archived is True and not record.archived:
        _ended(record, "archiving it")
    if archived is not None:
        values["archived"] = archived
    if title is not None:
        values.update(title=title.strip(), title_source="user")
    if visibility is not None:
        if not hasattr(SessionRecord, "visibility"):
            raise Conflict("not_supported", "This server has no users: visibility has no effect.")
        values["visibility"] = visibility
    if values:
        async with hub.db.write() as db, db.begin():
            await session_store.update_session(db, session_id, **values)
    return await hub.get_record(session_id)


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
    refs = run_git(
        repo,
        "for-each-ref",
        "--format=%(refname)",
        f"refs/agent-sessions/{record.id}/",
        check=False,
    ).text.split()
    if refs:
        run_git(
            repo,
            "update-ref",
            "--stdin",
            input_bytes="".join(f"delete {ref}\n" for ref in refs).encode(),
        )
    return Purged(worktree, len(refs), branch)


async def purge_session(hub: Hub, session_id: str, *, keep_branch: bool) -> None:
    """The ended session gone for good (409 ``session_active`` while it is active)."""
    record = await hub.get_record(session_id)
    _ended(record, "purging it")
    async with hub.db.read() as db:
        repo = await repo_store.get_repo(db, record.repo_id)
    async with session_lock(hub.writer, session_id):
        purged = (
            await in_thread(_remove_git, Path(repo.path), record, keep_branch)
            if repo is not None
            else Purged(False, 0, None)
        )
        async with hub.db.write() as db, db.begin():
            current = await session_store.get_session(db, session_id)
            if current is not None:
                _ended(current, "purging it")  # not revived meanwhile
                await glance_store.purge_rows(db, session_id)
    log.info(
        "session purged",
        extra={
            "session_id": session_id,
            "worktree": purged.worktree,
            "refs": purged.refs,
            "branch": purged.branch,
        },
    )
