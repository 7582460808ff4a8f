"""Repositories: register, list, show, delete."""

from __future__ import annotations

import errno
import logging
import stat
import uuid
from pathlib import Path

from sqlalchemy.exc import IntegrityError
from starlette.requests import Request
from starlette.responses import Response

from agent_bridge import PathOutsideWorkspace, Workspace, WorkspaceError
from server import shapes
from server.web.bodies import read_struct
from server.web.errors import ApiError
from server.web.jsonresp import JSONResponse
from server.web.requests import resource, uuid_param
from server.web.state import app_state
from server.web.views import repo_view
from store import Repo, utcnow
from store import repos as repo_store

log = logging.getLogger("agent_sessions.security")


def resolve_repo_path(root: Path, raw: str) -> Path:
    """The real directory a client names, inside the workspace root, or an ApiError."""
    if "\x00" in raw:
        log.warning(
            "repository path refused",
            extra={"event": "path_refused", "path": raw, "reason": "nul_byte"},
        )
        raise ApiError(
            403, "path_outside_workspace", "The path contains a NUL byte.", {"path": raw}
        )
    try:
        path = Workspace(root, context={"action": "register_repo"}).resolve(raw)
    except PathOutsideWorkspace as exc:
        raise ApiError(
            403,
            "path_outside_workspace",
            "The path leads outside the workspace root.",
            {"path": raw, "reason": exc.reason},
        ) from None
    except WorkspaceError as exc:
        raise ApiError.validation("The path cannot be used.", path=raw, reason=exc.reason) from None
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise ApiError.validation("The path does not exist.", path=raw) from None
    except OSError as exc:  # EACCES, ELOOP...: not a directory we can use
        reason = errno.errorcode.get(exc.errno or 0, "unusable").lower()
        raise ApiError.validation("The path cannot be used.", path=raw, reason=reason) from None
    if not stat.S_ISDIR(mode):
        raise ApiError.validation("The path is not a directory.", path=raw)
    return path


async def register_repo(request: Request, path: Path, name: str | None) -> Repo:
    state = app_state(request)
    repo = Repo(
        id=str(uuid.uuid4()),
        name=name or path.name,
        path=str(path),
        is_git_repo=(path / ".git").exists(),
        created_at=utcnow(),
    )
    already = ApiError(
        409, "repo_already_registered", "This directory is already registered.", {"path": str(path)}
    )
    try:
        async with state.db.write() as db, db.begin():
            if await repo_store.get_repo_by_path(db, str(path)) is not None:
                raise already
            await repo_store.add_repo(db, repo)
    except IntegrityError:  # another node (or request) registered it between check and insert
        raise already from None
    return repo


async def create_repo(request: Request) -> Response:
    state = app_state(request)
    body = await read_struct(request, shapes.RegisterRepo, state.settings.max_body_bytes)
    path = resolve_repo_path(state.settings.workspace_root, body.path)
    repo = await register_repo(request, path, body.name)
    return JSONResponse(repo_view(repo), status_code=201)


async def list_repos(request: Request) -> Response:
    async with app_state(request).db.read() as db:
        repos = await repo_store.list_repos(db)
    return JSONResponse({"repos": [repo_view(r) for r in repos]})


async def get_repo(request: Request) -> Response:
    repo_id = uuid_param(request, "repo_id")
    async with app_state(request).db.read() as db:
        repo = await repo_store.get_repo(db, repo_id)
    if repo is None:
        raise ApiError.not_found("repo", repo_id)
    return JSONResponse(repo_view(repo))


async def delete_repo(request: Request) -> Response:
    """Unregister; its finished sessions (and their logs) go with it."""
    repo_id = uuid_param(request, "repo_id")
    state = app_state(request)
    async with state.db.read() as db:
        repo = await repo_store.get_repo(db, repo_id)
        busy = repo is not None and await repo_store.count_active_sessions_of_repo(db, repo_id)
    if repo is not None and not busy:  # its sessions' worktrees and checkpoints go first
        await state.sessions.remove_repo_worktrees(repo_id, Path(repo.path))
    async with state.db.write() as db, db.begin():
        repo = await repo_store.get_repo(db, repo_id)
        if repo is None:
            raise ApiError.not_found("repo", repo_id)
        if await repo_store.count_active_sessions_of_repo(db, repo_id):
            raise ApiError(
                409, "repo_in_use", "The repository has active sessions; end them first."
            )
        await repo_store.delete_repo(db, repo)
    return Response(status_code=204)


routes = [
    resource("/api/repos", GET=list_repos, POST=create_repo),
    resource("/api/repos/{repo_id}", GET=get_repo, DELETE=delete_repo),
]
