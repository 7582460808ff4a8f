"""Snapshots of a workspace as git objects, without touching the user's index, ``HEAD``,
branches or stash.

A snapshot stages the workspace's whole state (tracked and untracked-not-ignored files)
into a *private* index (``GIT_INDEX_FILE``, one per session, kept in the repository's
git directory under ``agent-sessions/``) and writes a tree. The private index starts as a
copy of the real one and is kept between snapshots, so git's stat cache makes a snapshot
of an unchanged workspace cheap: nothing is re-read. A checkpoint is such a tree
committed (``commit-tree``, parent ``HEAD``) and kept under
``refs/agent-sessions/<session>/<run>``.

A crash (kill -9) in the middle leaves at most a ``.lock`` beside the *private* index;
it is removed before the next use. The user's ``index.lock`` is never taken
(``GIT_OPTIONAL_LOCKS=0``, and only the private index is written).
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import msgspec

from server.sessions.workspaces.git import GitFailed, run_git

__all__ = [
    "delete_refs",
    "Author",
    "checkpoint",
    "checkpoint_ref",
    "git_dir",
    "head_commit",
    "is_work_tree",
    "private_index",
    "resolve_commit",
    "restore",
    "snapshot",
]

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


class Author(msgspec.Struct, frozen=True):
    name: str
    email: str

    def env(self) -> dict[str, str]:
        return {
            "GIT_AUTHOR_NAME": self.name,
            "GIT_AUTHOR_EMAIL": self.email,
            "GIT_COMMITTER_NAME": self.name,
            "GIT_COMMITTER_EMAIL": self.email,
        }


def is_work_tree(path: Path) -> bool:
    result = run_git(path, "rev-parse", "--is-inside-work-tree", check=False)
    if result.code != 0 or result.text != "true":
        return False
    top = run_git(path, "rev-parse", "--show-toplevel", check=False).text
    return bool(top) and Path(top).resolve() == path.resolve()


def git_dir(path: Path) -> Path:
    """The work tree's own git directory (a linked worktree has its own)."""
    return Path(run_git(path, "rev-parse", "--absolute-git-dir").text)


def resolve_commit(path: Path, ref: str) -> str | None:
    if not ref or ref.startswith("-") or "\x00" in ref:
        return None
    result = run_git(path, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    return result.text or None if result.code == 0 else None


def head_commit(path: Path) -> str | None:
    return resolve_commit(path, "HEAD")


def checkpoint_ref(session_id: str, run_id: str) -> str:
    return f"refs/agent-sessions/{session_id}/{run_id}"


def private_index(path: Path, key: str) -> Path:
    """The session's own index file, seeded from the real index (for its stat cache);
    a stale lock left by a killed snapshot is removed (only this session uses it).
    Refused when the repository's config moves its work tree (``core.worktree``)
    elsewhere: a restore must never write outside the session's workspace."""
    top = run_git(path, "rev-parse", "--show-toplevel").text
    if not top or Path(top).resolve() != path.resolve():
        raise GitFailed(["rev-parse"], 1, f"the work tree is {top!r}, not the workspace")
    _check_link(path)
    gdir = git_dir(path)
    index = gdir / "agent-sessions" / f"{key}.index"
    index.parent.mkdir(exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        (index.parent / f"{key}.index.lock").unlink()
    if not index.exists() and (gdir / "index").exists():
        partial = index.with_suffix(".seed")
        shutil.copyfile(gdir / "index", partial)
        partial.replace(index)
    return index


def _check_link(path: Path) -> None:
    """A linked worktree's ``.git`` file (which its agent can edit) must name an
    administration directory that names this worktree back: it cannot send our writes
    (objects, refs, the private index) into another repository."""
    link = path / ".git"
    if not link.is_file():
        return
    text = link.read_text(errors="replace").strip()
    admin = Path(text.removeprefix("gitdir:").strip())
    if not admin.is_absolute():
        admin = path / admin
    try:
        back = Path((admin / "gitdir").read_text().strip())
    except OSError:
        back = None
    if back is None or back.resolve() != link.resolve():
        raise GitFailed(["rev-parse"], 1, "the worktree's .git file was changed")


def snapshot(path: Path, key: str) -> str:
    """The tree of the workspace's current state (tracked + untracked-not-ignored)."""
    env = {"GIT_INDEX_FILE": str(private_index(path, key))}
    try:
        run_git(path, "add", "--all", "--", ".", env=env)
    except GitFailed:
        # A corrupt or foreign private index: start it afresh once.
        Path(env["GIT_INDEX_FILE"]).unlink(missing_ok=True)
        run_git(path, "add", "--all", "--", ".", env=env)
    return run_git(path, "write-tree", env=env).text


def checkpoint(path: Path, key: str, ref: str, author: Author, message: str) -> str:
    """Commit the current state (parent: ``HEAD`` when there is one) and point ``ref``
    at it. Returns the commit."""
    tree = snapshot(path, key)
    parents = ["-p", head] if (head := head_commit(path)) else []
    commit = run_git(path, "commit-tree", tree, *parents, "-m", message, env=author.env()).text
    run_git(path, "update-ref", ref, commit)
    return commit


def restore(path: Path, key: str, commit: str) -> None:
    """Put the workspace's files back to ``commit``'s tree: changed files rewritten,
    files created since removed, ignored files untouched. The user's index and ``HEAD``
    stay as they are."""
    snapshot(path, key)  # the private index now lists exactly today's files
    env = {"GIT_INDEX_FILE": str(private_index(path, key))}
    run_git(path, "read-tree", "--reset", "-u", commit, env=env)


def delete_refs(repo: Path, session_id: str) -> int:
    """Delete every checkpoint ref of a session (one ``update-ref --stdin``); how many."""
    refs = run_git(
        repo,
        "for-each-ref",
        "--format=%(refname)",
        f"refs/agent-sessions/{session_id}/",
        check=False,
    ).text.split()
    if refs:
        run_git(
            repo,
            "update-ref",
            "--stdin",
            input_bytes="".join(f"delete {ref}\n" for ref in refs).encode(),
        )
    return len(refs)
