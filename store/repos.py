"""Repository functions for registered repositories. They never commit."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from store.models import Repo, SessionRecord

__all__ = [
    "add_repo",
    "count_active_sessions_of_repo",
    "delete_repo",
    "get_repo",
    "get_repo_by_path",
    "list_repos",
]


async def add_repo(db: AsyncSession, repo: Repo) -> Repo:
    db.add(repo)
    await db.flush()
    return repo


async def get_repo(db: AsyncSession, repo_id: str) -> Repo | None:
    return await db.get(Repo, repo_id)


async def get_repo_by_path(db: AsyncSession, path: str) -> Repo | None:
    return (await db.execute(select(Repo).where(Repo.path == path))).scalar_one_or_none()


async def list_repos(db: AsyncSession) -> Sequence[Repo]:
    return (await db.execute(select(Repo).order_by(Repo.created_at, Repo.id))).scalars().all()


async def count_active_sessions_of_repo(db: AsyncSession, repo_id: str) -> int:
    query = (
        select(func.count())
        .select_from(SessionRecord)
        .where(SessionRecord.repo_id == repo_id, SessionRecord.status == "active")
    )
    return int((await db.execute(query)).scalar_one())


async def delete_repo(db: AsyncSession, repo: Repo) -> None:
    """Delete the repository's row and its sessions' (their rows cascade from them)."""
    ids = (
        (await db.execute(select(SessionRecord.id).where(SessionRecord.repo_id == repo.id)))
        .scalars()
        .all()
    )
    if ids:
        await db.execute(delete(SessionRecord).where(SessionRecord.id.in_(ids)))
    await db.delete(repo)
