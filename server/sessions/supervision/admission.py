"""Admission: a new session is checked (agent, repository, parent run, the repository's
path still inside the workspace root) and stored ``active`` only while the server runs
fewer than ``MAX_CONCURRENT_SESSIONS``."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

from agent_bridge import Workspace, WorkspaceError
from server import metrics
from server.sessions.agents.config import AgentConfig
from server.sessions.errors import Forbidden, LimitReached, NotFound
from server.sessions.services import Services
from server.sessions.users.actor import current_actor
from server.sessions.users.limits import refuse_over_user_limit
from server.settings import Settings
from store import Repo, SessionRecord, utcnow
from store import repos as repo_store
from store import runs as run_store
from store import sessions as session_store

__all__ = ["admit", "checked_repo_path"]

security_log = logging.getLogger("agent_sessions.security")


def checked_repo_path(settings: Settings, repo: Repo, session_id: str | None = None) -> Path:
    """The repository's directory, refused (403) if it was moved or replaced so that it
    now leads outside the workspace root."""
    try:
        workspace = Workspace(repo.path)
        workspace.check_root()
        if str(workspace.root) != repo.path:
            raise WorkspaceError(repo.path, "replaced")
        Workspace(settings.workspace_root).resolve(repo.path)
    except WorkspaceError:
        security_log.warning(
            "repository path refused at use",
            extra={
                "event": "path_refused",
                "path": repo.path,
                "repo_id": repo.id,
                "session_id": session_id,
            },
        )
        raise Forbidden(
            "path_outside_workspace",
            "The repository's directory was moved or replaced and now leads outside the workspace.",
        ) from None
    return workspace.root


async def admit(
    services: Services,
    agents: dict[str, AgentConfig],
    repo_id: str,
    agent_id: str | None,
    title: str | None,
    parent_run_id: str | None,
    forked_from: tuple[str, int] | None = None,
    visibility: str = "team",
) -> SessionRecord:
    """Store a new ``active`` session, or refuse it (404 agent/repo/run, 403, 429); its
    owner is the user acting (API.md "Users and access")."""
    agent_id = agent_id or "default"
    if agent_id not in agents:
        raise NotFound("agent", agent_id)
    async with services.db.read() as db:
        repo = await repo_store.get_repo(db, repo_id)
        parent = await run_store.get_run(db, parent_run_id) if parent_run_id else None
    if repo is None:
        raise NotFound("repo", repo_id)
    if parent_run_id and parent is None:
        raise NotFound("run", parent_run_id)
    checked_repo_path(services.settings, repo)  # refuses a repository whose path left the root
    now = utcnow()
    record = SessionRecord(
        id=str(uuid.uuid4()),
        repo_id=repo_id,
        agent_id=agent_id,
        status="active",
        title=title,
        created_at=now,
        updated_at=now,
        last_activity_at=now,
        last_seq=0,
        parent_run_id=parent_run_id,
        needs_context=forked_from is not None,
        forked_from_session_id=forked_from[0] if forked_from else None,
        forked_from_seq=forked_from[1] if forked_from else None,
        meta={},
        visibility=visibility,
    )
    owner = current_actor()
    if owner is not None and owner.user_id is not None:
        record.owner_id, record.owner_name = owner.user_id, owner.name
    limit = services.settings.max_concurrent_sessions
    async with services.db.write() as db, db.begin():
        active = await session_store.insert_session_within_limit(db, record, limit)
        if active is not None:
            await refuse_over_user_limit(services.settings, db, record)
    if active is None:
        raise _limit_reached(limit)
    return record


def _limit_reached(limit: int) -> LimitReached:
    metrics.refused()
    return LimitReached(  # the edge adds Retry-After: 60
        "session_limit_reached",
        f"The server already runs its limit of {limit} active sessions. "
        "Wait for one to finish (or complete one) and try again in a minute.",
        {"limit": limit},
    )


async def refuse_when_full(services: Services) -> None:
    """Refuse early, before any costly preparation (git), when the limit is already
    reached. Only a shortcut: ``admit`` makes the atomic decision."""
    limit = services.settings.max_concurrent_sessions
    async with services.db.read() as db:
        if await session_store.count_active_sessions(db) >= limit:
            raise _limit_reached(limit)
