"""Registered repositories: register, list, show, delete."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from sqlalchemy.exc import IntegrityError

from server.sessions.errors import Conflict, NotFound
from store import Database, Repo, utcnow
from store import repos as repo_store

__all__ = ["Repos"]

RemoveWorktrees = Callable[[str, Path], Awaitable[None]]


class Repos:
    """The repositories; deleting one first removes its sessions' worktrees and
    checkpoints through ``remove_worktrees`` (the workspaces' step)."""

    def __init__(self, database: Database, remove_worktrees: RemoveWorktrees) -> None:
        self.database = database
        self.remove_worktrees = remove_worktrees

    async def register(self, path: Path, name: str | None) -> Repo:
        """Register a directory the edge resolved inside the workspace root."""
        repo = Repo(
            id=str(uuid.uuid4()),
            name=name or path.name,
            path=str(path),
            is_git_repo=(path / ".git").exists(),
            created_at=utcnow(),
        )
        already = Conflict(
            "repo_already_registered",
            "This directory is already registered.",
            {"path": str(path)},
        )
        try:
            async with self.database.write() as db, db.begin():
                if await repo_store.get_repo_by_path(db, str(path)) is not None:
                    raise already
                await repo_store.add_repo(db, repo)
        except IntegrityError:  # another node (or request) registered it between check and insert
            raise already from None
        return repo

    async def list(self) -> Sequence[Repo]:
        async with self.database.read() as db:
            return await repo_store.list_repos(db)

    async def get(self, repo_id: str) -> Repo:
        """The repository (NotFound when there is none)."""
        async with self.database.read() as db:
            repo = await repo_store.get_repo(db, repo_id)
        if repo is None:
            raise NotFound("repo", repo_id)
        return repo

    async def delete(self, repo_id: str) -> None:
        """Unregister; its finished sessions (and their logs) go with it. Refused while
        it has active sessions."""
        async with self.database.read() as db:
            repo = await repo_store.get_repo(db, repo_id)
            busy = repo is not None and await repo_store.count_active_sessions_of_repo(db, repo_id)
        if repo is not None and not busy:  # its sessions' worktrees and checkpoints go first
            await self.remove_worktrees(repo_id, Path(repo.path))
        async with self.database.write() as db, db.begin():
            repo = await repo_store.get_repo(db, repo_id)
            if repo is None:
                raise NotFound("repo", repo_id)
            if await repo_store.count_active_sessions_of_repo(db, repo_id):
                raise Conflict("repo_in_use", "The repository has active sessions; end them first.")
            await repo_store.delete_repo(db, repo)
