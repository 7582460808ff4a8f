"""What the web asks of sessions' workspaces (``sessions.workspaces``): a session's
changes, commit, merge and worktree deletion; the review's tree, files and reverts; the
file search of a prompt's mentions; and a deleted repository's worktrees. A review's
prompt starts a turn, so it stays on the facade (``Sessions.review``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio

from server.sessions.records import get_record
from server.sessions.services import Services
from server.sessions.workspaces import operations, review, service
from server.sessions.workspaces.changes import Committed, Merged, SessionChanges
from server.sessions.workspaces.file_index import INDEX
from server.sessions.workspaces.review import FileRead
from server.sessions.workspaces.tree import Entry
from store import repos as repo_store

__all__ = ["Workspaces"]


class Workspaces:
    """Given the services and whether a session's turn is running (the registry's)."""

    def __init__(self, services: Services, turn_running: Callable[[str], bool]) -> None:
        self.services = services
        self.turn_running = turn_running

    async def changes(self, session_id: str, run_id: str | None) -> SessionChanges:
        return await operations.changes(self.services, session_id, run_id)

    async def commit(self, session_id: str, message: str) -> Committed:
        return await operations.commit(self.services, self.turn_running, session_id, message)

    async def merge(
        self, session_id: str, into: str | None, strategy: str, message: str | None
    ) -> Merged:
        return await operations.merge_session(self.services, session_id, into, strategy, message)

    async def delete_worktree(self, session_id: str, delete_branch: bool) -> None:
        await operations.delete_worktree(self.services, session_id, delete_branch)

    async def tree(self, session_id: str, path: str, ref: str | None) -> list[Entry]:
        """A directory of the workspace (``ref`` None) or of a commit."""
        return await review.list_tree(self.services, session_id, path, ref)

    async def read_file(self, session_id: str, path: str, ref: str | None, raw: bool) -> FileRead:
        return await review.read_file(self.services, session_id, path, ref, raw)

    async def revert(self, session_id: str, path: str, hunks: list[int] | None) -> SessionChanges:
        """A file, or some hunks of it, put back as at ``baseCommit``; the changes after."""
        return await review.revert(self.services, self.turn_running, session_id, path, hunks)

    async def find_files(self, session_id: str, query: str, limit: int) -> list[str] | None:
        """Files of the session's workspace matching ``query`` (None: no repository)."""
        async with self.services.db.read() as db:
            record = await get_record(self.services.db, session_id, db)
            repo = await repo_store.get_repo(db, record.repo_id)
        if repo is None:
            return None
        root = service.session_root(self.services.settings, record, Path(repo.path))
        found: list[str] = await anyio.to_thread.run_sync(INDEX.search, root, query, limit)
        return found

    async def remove_repo_worktrees(self, repo_id: str, repo: Path) -> None:
        """A repository is deleted: its sessions' worktrees and checkpoints go."""
        await service.remove_repo_worktrees(self.services, repo_id, repo)
