"""The session operations of API.md "Worktrees and changes": changes, commit, merge and
deleting a worktree. Every refusal happens before anything is written."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from server.contents import CommitContent, MergeContent, as_json
from server.sessions.errors import Conflict, Invalid, NotFound, TurnInProgress
from server.sessions.records import get_record
from server.sessions.services import Services
from server.sessions.users.actor import actor_ref, signed
from server.sessions.workspaces import checkpoints, merge, worktrees
from server.sessions.workspaces.changes import (
    Changes,
    Committed,
    Merged,
    SessionChanges,
    diff_trees,
)
from server.sessions.workspaces.review_log import merged_state, record_review
from server.sessions.workspaces.service import (
    author,
    in_thread,
    session_lock,
)
from store import SessionRecord
from store import repos as repo_store
from store import runs as run_store
from store import workspaces as workspace_store

__all__ = ["changes", "commit", "delete_worktree", "merge_session"]

log = logging.getLogger("agent_sessions.workspaces")


async def _record_and_repo(services: Services, session_id: str) -> tuple[SessionRecord, Path]:
    record = await get_record(services.db, session_id)
    async with services.db.read() as db:
        repo = await repo_store.get_repo(db, record.repo_id)
    assert repo is not None
    return record, Path(repo.path)


def _workspace(record: SessionRecord, repo: Path) -> Path | None:
    """The directory whose files are the session's "now" (None: its worktree is gone)."""
    if record.isolation == "worktree":
        path = Path(record.workspace_path or "")
        return path if record.workspace_path and path.is_dir() else None
    return repo


def _now(record: SessionRecord, repo: Path) -> str:
    path = _workspace(record, repo)
    if path is not None:
        return checkpoints.snapshot(path, record.id)
    branch = checkpoints.resolve_commit(repo, f"refs/heads/{record.branch}")
    if branch is None:
        raise Conflict("not_a_worktree", "The session's worktree and branch were deleted.")
    return branch


def _changes(
    record: SessionRecord, repo: Path, runs: list[str], run_id: str | None, limit: int
) -> Changes:
    if not checkpoints.is_work_tree(repo):
        raise Invalid("The session's repository is not a git repository.", "not_a_git_repo")
    if run_id is None:
        old = record.base_commit or checkpoints.EMPTY_TREE
        return diff_trees(repo, old, _now(record, repo), limit)
    start = checkpoints.resolve_commit(repo, checkpoints.checkpoint_ref(record.id, run_id))
    if start is None:
        raise Conflict("no_checkpoint", "This run has no checkpoint (it ran before git was used).")
    later = runs[runs.index(run_id) + 1 :]
    end = None
    for other in later:
        end = checkpoints.resolve_commit(repo, checkpoints.checkpoint_ref(record.id, other))
        if end is not None:
            break
    return diff_trees(repo, start, end or _now(record, repo), limit)


async def changes(services: Services, session_id: str, run_id: str | None) -> SessionChanges:
    record, repo = await _record_and_repo(services, session_id)
    async with services.db.read() as db:
        runs = await workspace_store.run_ids(db, session_id)
        if run_id is not None:
            run = await run_store.get_run(db, run_id)
            if run is None or run.session_id != session_id:
                raise NotFound("run", run_id)
    async with session_lock(services.writer, session_id):
        found = await in_thread(
            _changes, record, repo, runs, run_id, services.settings.max_diff_bytes
        )
    scope = "session" if record.isolation == "worktree" else "workspace"
    return {"baseCommit": record.base_commit, "scope": scope, **found}


def _require_worktree(record: SessionRecord) -> None:
    if record.isolation != "worktree":
        raise Conflict(
            "not_a_worktree", "The session works in the repository itself (isolation none)."
        )


async def commit(
    services: Services, turn_running: Callable[[str], bool], session_id: str, message: str
) -> Committed:
    record, repo = await _record_and_repo(services, session_id)
    _require_worktree(record)
    if turn_running(session_id):
        raise TurnInProgress("A turn is running; wait for it or cancel it.")
    path = _workspace(record, repo)
    if path is None:
        raise Conflict("not_a_worktree", "The session's worktree was deleted.")
    assert record.branch is not None
    async with session_lock(services.writer, session_id):
        head = await in_thread(checkpoints.head_commit, path)
        made = await in_thread(
            merge.commit_all,
            path,
            record.id,
            record.branch,
            signed(message),
            author(services.settings),
        )
        if made is None:
            raise Conflict("nothing_to_commit", "The worktree has no change to commit.")
        found = await in_thread(diff_trees, path, head or checkpoints.EMPTY_TREE, made, 0)
    content: CommitContent = {
        "type": "review",
        "action": "commit",
        "commit": made,
        "branch": record.branch,
        "files": [f["path"] for f in found["files"]],
        "by": actor_ref(),
    }
    await record_review(services.writer, record, as_json(content))
    log.info("worktree committed", extra={"session_id": session_id, "commit": made})
    return {"commit": made, "files": found["files"]}


async def merge_session(
    services: Services, session_id: str, into: str | None, strategy: str, message: str | None
) -> Merged:
    record, repo = await _record_and_repo(services, session_id)
    _require_worktree(record)
    assert record.branch is not None
    target = into or record.base_ref
    if not target or target == "HEAD":
        raise Invalid("Name the branch to merge into (into).", field="into")
    exists = await in_thread(checkpoints.resolve_commit, repo, f"refs/heads/{target}")
    if exists is None or target.startswith("-"):
        raise Invalid(f"No branch {target!r} to merge into.", field="into", into=target)
    source = await in_thread(checkpoints.resolve_commit, repo, f"refs/heads/{record.branch}")
    if source is None:
        raise Conflict("not_a_worktree", "The session's branch was deleted.")
    text = signed(message or f"Merge {record.branch} ({record.title or session_id}) into {target}")
    async with session_lock(services.writer, session_id):
        outcome = await in_thread(
            merge.merge_branch,
            repo,
            source,
            target,
            strategy == "squash",
            text,
            author(services.settings),
        )
    if outcome.up_to_date:
        raise Conflict("nothing_to_commit", f"{target} already has every commit of the branch.")
    if outcome.conflicts:
        raise Conflict(
            "merge_conflict",
            f"Merging into {target} conflicts in {len(outcome.conflicts)} file(s); nothing "
            "was changed.",
            {"files": outcome.conflicts, "into": target},
        )
    if outcome.dirty is not None:
        raise Conflict(
            "target_dirty",
            f"{target} is checked out in {outcome.dirty} with uncommitted changes; commit or "
            "stash them first. Nothing was changed.",
            {"path": str(outcome.dirty), "into": target},
        )
    merged: MergeContent = {
        "type": "review",
        "action": "merge",
        "commit": outcome.commit,
        "into": target,
        "strategy": strategy,
        "by": actor_ref(),
    }
    state = merged_state(session_id, outcome.commit, target)
    await record_review(services.writer, record, as_json(merged), [state])
    log.info("session merged", extra={"session_id": session_id, "into": target})
    return {"commit": outcome.commit, "into": target}


async def delete_worktree(services: Services, session_id: str, delete_branch: bool) -> None:
    record, repo = await _record_and_repo(services, session_id)
    _require_worktree(record)
    if record.status == "active":
        raise Conflict("session_active", "The session is active; complete or delete it first.")
    path = Path(record.workspace_path or "")
    async with session_lock(services.writer, session_id):
        await in_thread(
            worktrees.remove_worktree, repo, path, record.branch if delete_branch else None
        )
    log.info("worktree deleted", extra={"session_id": session_id})
