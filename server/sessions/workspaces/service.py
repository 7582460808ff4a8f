"""Session workspaces for the session domain: planning a new session's workspace,
making its worktree, the checkpoint before each turn, restoring files on rewind, a fork's
own worktree, and the cleanup at repository delete and at start.

Every git operation runs on a worker thread (``anyio.to_thread``), one at a time per
session (a lock per session), so the event loop never waits on git.
"""

import logging
import weakref
from collections import defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypedDict, TypeVar

import anyio
import msgspec

from server.sessions.errors import (
    Conflict,
    Forbidden,
    Invalid,
    Unavailable,
)
from server.sessions.services import Services
from server.sessions.workspaces import checkpoints, worktrees
from server.sessions.workspaces.checkpoints import Author
from server.sessions.workspaces.git import GitError, GitMissing, GitTooOld, run_git
from server.settings import CLEANUP_SECONDS, Settings
from server.stream.writer import Writer
from store import SessionRecord
from store import repos as repo_store
from store import sessions as session_store
from store import workspaces as workspace_store

__all__ = [
    "Plan",
    "apply",
    "author",
    "checkpoint_turn",
    "fork_plan",
    "in_thread",
    "make_fork_worktree",
    "make_worktree",
    "plan_session",
    "recover",
    "remove_repo_worktrees",
    "repo_path",
    "restore_for_rewind",
    "session_lock",
    "session_root",
]

log = logging.getLogger("agent_sessions.workspaces")
T = TypeVar("T")

_locks: weakref.WeakKeyDictionary[Any, defaultdict[str, anyio.Lock]] = weakref.WeakKeyDictionary()


def session_lock(owner: Writer, session_id: str) -> anyio.Lock:
    """One git operation at a time per session (keyed by the app's writer, which the domain
    and its live sessions share: one lock table per app)."""
    return _locks.setdefault(owner, defaultdict(anyio.Lock))[session_id]


async def in_thread(func: Callable[..., T], *args: Any) -> T:
    """Run a git operation on a worker thread; git problems become a clear 409/422."""
    try:
        return await anyio.to_thread.run_sync(func, *args)
    except (GitMissing, GitTooOld) as exc:
        raise Unavailable("git_unavailable", str(exc)) from None
    except GitError as exc:
        log.warning("git operation failed: %s", exc)
        raise Conflict("git_failed", str(exc)) from None


def author(settings: Settings) -> Author:
    return Author(settings.git_author_name, settings.git_author_email)


class WorkspaceColumns(TypedDict):
    """A session record's workspace columns."""

    isolation: str
    workspace_path: str | None
    branch: str | None
    base_ref: str | None
    base_commit: str | None


class Plan(msgspec.Struct, frozen=True):
    """What a new session's workspace will be; ``columns(id)`` fills its record."""

    root: Path
    isolation: str
    base_ref: str | None
    base_commit: str | None

    def columns(self, session_id: str) -> WorkspaceColumns:
        worktree = self.isolation == "worktree"
        return {
            "isolation": self.isolation,
            "workspace_path": str(worktrees.worktree_path(self.root, session_id))
            if worktree
            else None,
            "branch": worktrees.branch_name(session_id) if worktree else None,
            "base_ref": self.base_ref,
            "base_commit": self.base_commit,
        }


def _describe_base(repo: Path, base_ref: str | None) -> tuple[str | None, str | None]:
    """(base ref as shown: a branch name where it names one, base commit)."""
    if not (repo / ".git").exists() or not checkpoints.is_work_tree(repo):
        return None, None
    ref = base_ref or "HEAD"
    commit = checkpoints.resolve_commit(repo, ref)
    if commit is None:
        return ref, None
    full = run_git(repo, "rev-parse", "--symbolic-full-name", ref, check=False).text
    if full.startswith("refs/heads/"):
        return full[len("refs/heads/") :], commit
    return ref, commit


async def plan_session(
    services: Services,
    repo_id: str,
    isolation: str | None,
    base_ref: str | None,
    before_git: Callable[[], Awaitable[None]],
) -> Plan | None:
    """Check a create request's ``isolation`` and ``baseRef`` before anything is made
    (None: no such repository, which ``create_session`` answers with 404). ``before_git``
    (the admission's early refusal) runs once the repository is found, before git does."""
    settings = services.settings
    async with services.db.read() as db:
        repo = await repo_store.get_repo(db, repo_id)
    if repo is None:
        return None
    await before_git()  # a refused create costs no git call
    path = Path(repo.path)
    chosen = isolation or settings.default_isolation
    try:
        shown, commit = await in_thread(_describe_base, path, base_ref)
    except Unavailable:
        if isolation == "worktree" or base_ref is not None:
            raise
        return Plan(settings.workspace_root, "none", None, None)  # no git: a plain directory
    is_git = shown is not None
    if chosen == "worktree" and not is_git:
        if isolation is None:  # the default does not make a plain directory unusable
            chosen = "none"
        else:
            raise Invalid(
                "Isolation needs a git repository; this one is a plain directory.",
                "not_a_git_repo",
                field="isolation",
            )
    if base_ref is not None and (not is_git or commit is None):
        raise Invalid(f"Unknown base ref {base_ref!r}.", field="baseRef", baseRef=base_ref)
    if chosen == "worktree" and commit is None:
        raise Invalid(
            "The repository has no commit to start a worktree from; commit once first.",
            field="baseRef",
        )
    return Plan(settings.workspace_root, chosen, shown, commit)


def session_root(settings: Settings, record: SessionRecord, repo_root: Path) -> Path:
    """The directory the session's agent works in: its worktree, or the repository."""
    if record.isolation != "worktree" or not record.workspace_path:
        return repo_root
    path = Path(record.workspace_path)
    root = settings.workspace_root
    if not path.resolve().is_relative_to(root / worktrees.DIRECTORY):
        raise Forbidden("path_outside_workspace", "The session's worktree left the workspace.")
    if not path.is_dir():
        raise Conflict("worktree_missing", "The session's worktree was deleted.")
    return path.resolve()


async def apply(services: Services, record: SessionRecord, columns: WorkspaceColumns) -> None:
    """Store a just-admitted session's workspace columns (and set them on ``record``)."""
    async with services.db.write() as db, db.begin():
        await session_store.update_session(db, record.id, **columns)
    for name, value in columns.items():
        setattr(record, name, value)


async def _undo_worktree(repo: Path, root: Path, session_id: str) -> None:
    """A worktree that could not be made (or filled) goes (its session then ends in
    error: the caller's clean-up)."""
    await anyio.to_thread.run_sync(
        worktrees.remove_worktree,
        repo,
        worktrees.worktree_path(root, session_id),
        worktrees.branch_name(session_id),
    )
    worktrees.finish_creation(root, session_id)


async def make_worktree(services: Services, record: SessionRecord, plan: Plan | None) -> None:
    """Record the new session's workspace and create its worktree on its branch from its
    base commit; on failure nothing is left behind (and the caller ends the session in
    ``error``, reason ``worktree_failed``)."""
    if plan is None:
        return
    await apply(services, record, plan.columns(record.id))
    if record.isolation != "worktree" or record.base_commit is None:
        return
    root = services.settings.workspace_root
    repo = await repo_path(services, record)
    start = record.base_commit
    try:
        await in_thread(worktrees.create_worktree, repo, root, record.id, start)
    except BaseException:
        with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
            await _undo_worktree(repo, root, record.id)
        raise
    worktrees.finish_creation(root, record.id)
    log.info("worktree created", extra={"session_id": record.id, "branch": record.branch})


# -- checkpoints and rewind --------------------------------------------------------------


def _checkpoint(path: Path, session_id: str, run_id: str, who: Author) -> str | None:
    if not (path / ".git").exists() or not checkpoints.is_work_tree(path):
        return None
    ref = checkpoints.checkpoint_ref(session_id, run_id)
    return checkpoints.checkpoint(path, session_id, ref, who, f"checkpoint before run {run_id}")


async def checkpoint_turn(
    settings: Settings, writer: Writer, session_id: str, run_id: str, path: Path
) -> None:
    """Record the workspace before a turn; a failure is logged, never stops the turn."""
    try:
        async with session_lock(writer, session_id):
            await anyio.to_thread.run_sync(_checkpoint, path, session_id, run_id, author(settings))
    except (GitError, OSError):
        log.warning("checkpoint failed", exc_info=True, extra={"session_id": session_id})


async def repo_path(services: Services, record: SessionRecord) -> Path:
    async with services.db.read() as db:
        repo = await repo_store.get_repo(db, record.repo_id)
    assert repo is not None
    return Path(repo.path)


async def restore_for_rewind(services: Services, record: SessionRecord, seq: int) -> bool:
    """Put the files back to the checkpoint of the first run after ``seq``; False when
    no run came after it (the files are as they were then)."""
    async with services.db.read() as db:
        run_id = await workspace_store.first_run_after(db, record.id, seq)
    if run_id is None:
        return False
    path = session_root(services.settings, record, await repo_path(services, record))
    ref = checkpoints.checkpoint_ref(record.id, run_id)
    commit = await in_thread(checkpoints.resolve_commit, path, ref)
    if commit is None:
        raise Conflict("no_checkpoint", "That turn has no checkpoint to restore files from.")
    async with session_lock(services.writer, record.id):
        await in_thread(checkpoints.restore, path, record.id, commit)
    log.info("files restored", extra={"session_id": record.id, "run_id": run_id})
    return True


# -- fork --------------------------------------------------------------------------------


def fork_plan(services: Services, source: SessionRecord) -> Callable[[str], WorkspaceColumns]:
    """The fork's workspace columns: its own worktree when the source has one."""
    plan = Plan(
        services.settings.workspace_root, source.isolation, source.base_ref, source.base_commit
    )
    return plan.columns


def _fork_state(
    path: Path, repo: Path, key: str, ref: str, who: Author, checkpoint: str | None
) -> str:
    """The source's files at the fork point: its checkpoint, or its state now."""
    if checkpoint is not None:
        return checkpoint
    return checkpoints.checkpoint(path if path.is_dir() else repo, key, ref, who, "fork point")


def _populate(repo: Path, root: Path, session_id: str, state: str) -> None:
    """The fork's worktree: its branch at the state's commit's parent (the source's HEAD
    then), its files the state itself (uncommitted changes, as the source had them)."""
    parent = checkpoints.resolve_commit(repo, f"{state}^") or state
    new = worktrees.create_worktree(repo, root, session_id, parent)
    checkpoints.restore(new.path, session_id, state)


async def make_fork_worktree(
    services: Services, source: SessionRecord, record: SessionRecord, upto: int
) -> None:
    """The fork's workspace: the source's isolation and base; its own worktree and branch
    (when the source has one) holding the source's files at the fork point."""
    await apply(services, record, fork_plan(services, source)(record.id))
    if record.isolation != "worktree":
        return
    repo = await repo_path(services, record)
    async with services.db.read() as db:
        run_id = await workspace_store.first_run_after(db, source.id, upto)
    source_path = Path(source.workspace_path or repo)
    checkpoint = None
    if run_id is not None:
        ref = checkpoints.checkpoint_ref(source.id, run_id)
        checkpoint = await in_thread(checkpoints.resolve_commit, repo, ref)
    root = services.settings.workspace_root
    try:
        async with session_lock(services.writer, source.id):
            state = await in_thread(
                _fork_state,
                source_path,
                repo,
                source.id,
                checkpoints.checkpoint_ref(record.id, "fork"),
                author(services.settings),
                checkpoint,
            )
        await in_thread(_populate, repo, root, record.id, state)
    except BaseException:
        with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
            await _undo_worktree(repo, root, record.id)
        raise
    worktrees.finish_creation(root, record.id)


# -- cleanup -----------------------------------------------------------------------------


def _remove_session_git(repo: Path, record: SessionRecord) -> None:
    if not repo.is_dir():
        return
    if record.isolation == "worktree" and record.workspace_path:
        worktrees.remove_worktree(repo, Path(record.workspace_path))
    checkpoints.delete_refs(repo, record.id)


async def remove_repo_worktrees(services: Services, repo_id: str, repo: Path) -> None:
    """Repository delete: its sessions' worktrees and checkpoints go (branches stay)."""
    async with services.db.read() as db:
        records = await workspace_store.sessions_of_repo(db, repo_id)
    for record in records:
        await in_thread(_remove_session_git, repo, record)


async def recover(settings: Settings) -> list[str]:
    """At start: remove worktrees whose creation was cut short; the ids of their sessions
    (which the supervisor ends)."""
    return await anyio.to_thread.run_sync(worktrees.recover, settings.workspace_root)
