"""Git worktrees for isolated sessions, under ``<workspace root>/.worktrees/<session id>``
on branch ``agent/<first 8 hex of the session id>``.

Crash safety: a marker ``.worktrees/.<session id>.creating`` (naming the repository and
the branch) is written before ``git worktree add`` and removed once the session's record
holds the worktree. A marker found at start means a creation was cut short: its
directory, its git administration and its branch are removed (``recover``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
from pathlib import Path

import msgspec

from server.sessions.workspaces.git import GitFailed, run_git

__all__ = [
    "DIRECTORY",
    "NewWorktree",
    "branch_name",
    "create_worktree",
    "finish_creation",
    "recover",
    "remove_worktree",
    "worktree_path",
]

log = logging.getLogger("agent_sessions.workspaces")
DIRECTORY = ".worktrees"


class NewWorktree(msgspec.Struct, frozen=True):
    path: Path
    branch: str


def branch_name(session_id: str) -> str:
    return f"agent/{session_id.replace('-', '')[:8]}"


def worktree_path(root: Path, session_id: str) -> Path:
    return root / DIRECTORY / session_id


def _marker(root: Path, session_id: str) -> Path:
    return root / DIRECTORY / f".{session_id}.creating"


def create_worktree(repo: Path, root: Path, session_id: str, commit: str) -> NewWorktree:
    """``git worktree add -b agent/<hex> <root>/.worktrees/<id> <commit>``."""
    path = worktree_path(root, session_id)
    branch = branch_name(session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    marker = _marker(root, session_id)
    marker.write_text(json.dumps({"repo": str(repo), "branch": branch, "path": str(path)}))
    run_git(repo, "worktree", "add", "--quiet", "-b", branch, str(path), commit)
    return NewWorktree(path, branch)


def finish_creation(root: Path, session_id: str) -> None:
    _marker(root, session_id).unlink(missing_ok=True)


def remove_worktree(repo: Path, path: Path, branch: str | None = None) -> None:
    """Remove the worktree directory and its administration (even when half-made or
    already gone); delete ``branch`` too when given."""
    if path.exists():
        result = run_git(repo, "worktree", "remove", "--force", "--force", str(path), check=False)
        if result.code != 0 and path.exists():
            shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(GitFailed):
        run_git(repo, "worktree", "prune")
    if branch:
        run_git(repo, "update-ref", "-d", f"refs/heads/{branch}", check=False)


def recover(root: Path) -> list[str]:
    """Clean up worktrees whose creation was cut short; returns their session ids."""
    directory = root / DIRECTORY
    if not directory.is_dir():
        return []
    cleaned = []
    for marker in sorted(directory.glob(".*.creating")):
        session_id = marker.name[1 : -len(".creating")]
        try:
            facts = json.loads(marker.read_text())
            repo = Path(facts["repo"])
            if repo.is_dir():
                remove_worktree(repo, Path(facts["path"]), facts["branch"])
            else:
                shutil.rmtree(worktree_path(root, session_id), ignore_errors=True)
        except (OSError, ValueError, KeyError, GitFailed):
            log.warning("could not clean up a half-made worktree", exc_info=True)
            continue
        marker.unlink(missing_ok=True)
        log.info("removed a half-made worktree", extra={"session_id": session_id})
        cleaned.append(session_id)
    return cleaned
