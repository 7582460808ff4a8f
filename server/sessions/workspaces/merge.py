"""Commit a worktree's changes on its branch, and merge a branch into another, computed
first without touching any working tree (``git merge-tree --write-tree``).

Every refusal leaves the repository exactly as it was: a conflict or a dirty checkout is
found before any ref moves; refs move with compare-and-swap (``update-ref new old``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import msgspec

from server.sessions.workspaces.checkpoints import Author, git_dir, private_index, snapshot
from server.sessions.workspaces.git import run_git

__all__ = [
    "MergeOutcome",
    "commit_all",
    "merge_branch",
    "checked_out_at",
    "is_clean",
]


class MergeOutcome(msgspec.Struct, frozen=True):
    """``commit`` set on success; ``conflicts`` or ``dirty`` on refusal; ``up_to_date``
    when there is nothing to merge."""

    commit: str | None = None
    conflicts: list[str] = msgspec.field(default_factory=list)
    dirty: Path | None = None
    up_to_date: bool = False


def commit_all(path: Path, key: str, branch: str, message: str, author: Author) -> str | None:
    """Commit every change of the worktree on ``branch``; None when nothing changed.
    The worktree's own index is then replaced by the committed state (atomically), so
    ``git status`` there is clean."""
    tree = snapshot(path, key)
    head = run_git(path, "rev-parse", "--verify", "--quiet", "HEAD", check=False).text or None
    head_tree = run_git(path, "rev-parse", f"{head}^{{tree}}").text if head else None
    if tree == head_tree:
        return None
    parents = ["-p", head] if head else []
    commit = run_git(path, "commit-tree", tree, *parents, "-m", message, env=author.env()).text
    run_git(path, "update-ref", f"refs/heads/{branch}", commit, head or "")
    index = git_dir(path) / "index"
    staged = index.with_name("index.agent-sessions")
    shutil.copyfile(private_index(path, key), staged)
    os.replace(staged, index)
    return commit


def checked_out_at(repo: Path, branch: str) -> list[Path]:
    """The working trees (main or linked) that have ``branch`` checked out."""
    listing = run_git(repo, "worktree", "list", "--porcelain", "-z").stdout.decode(
        "utf-8", "surrogateescape"
    )
    found: list[Path] = []
    current: Path | None = None
    for line in listing.split("\0"):
        if line.startswith("worktree "):
            current = Path(line[len("worktree ") :])
        elif line == f"branch refs/heads/{branch}" and current is not None:
            found.append(current)
    return found


def is_clean(path: Path) -> bool:
    """No staged or unstaged change to a tracked file (untracked files do not count;
    an update that would overwrite one is refused by git itself)."""
    result = run_git(path, "status", "--porcelain=v1", "-z", "--untracked-files=no")
    return result.stdout == b""


def _follow(checkout: Path, old: str, new: str) -> bool:
    """Move a checkout's files and index from ``old`` to ``new`` like a fast-forward.
    git works on a copy of the index that replaces the real one at the end, so a kill in
    the middle never leaves the user an ``index.lock``."""
    index = git_dir(checkout) / "index"
    staged = index.with_name("index.agent-sessions-merge")
    staged.unlink(missing_ok=True)
    if index.exists():
        shutil.copyfile(index, staged)
    env = {"GIT_INDEX_FILE": str(staged)}
    result = run_git(checkout, "read-tree", "-m", "-u", old, new, env=env, check=False)
    if result.code != 0:
        staged.unlink(missing_ok=True)
        return False
    os.replace(staged, index)
    return True


def merge_branch(
    repo: Path, source: str, into: str, squash: bool, message: str, author: Author
) -> MergeOutcome:
    """Merge commit ``source`` into branch ``into`` (a merge commit, or one squashed
    commit). Checked-out copies of ``into`` are updated only when clean."""
    target = run_git(repo, "rev-parse", "--verify", f"refs/heads/{into}^{{commit}}").text
    if run_git(repo, "merge-base", "--is-ancestor", source, target, ok_codes=(0, 1)).code == 0:
        return MergeOutcome(up_to_date=True)
    result = run_git(
        repo,
        "merge-tree",
        "--write-tree",
        "--name-only",
        "-z",
        "--no-messages",
        target,
        source,
        ok_codes=(0, 1),
    )
    fields = result.stdout.decode("utf-8", "surrogateescape").split("\0")
    tree = fields[0].strip()
    if result.code == 1:
        return MergeOutcome(conflicts=sorted({f for f in fields[1:] if f}))
    checkouts = checked_out_at(repo, into)
    for checkout in checkouts:
        if not is_clean(checkout):
            return MergeOutcome(dirty=checkout)
    parents = ["-p", target] if squash else ["-p", target, "-p", source]
    commit = run_git(repo, "commit-tree", tree, *parents, "-m", message, env=author.env()).text
    for checkout in checkouts:
        if not _follow(checkout, target, commit):
            return MergeOutcome(dirty=checkout)
    run_git(repo, "update-ref", f"refs/heads/{into}", commit, target)
    return MergeOutcome(commit=commit)
