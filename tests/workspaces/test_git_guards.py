"""The git module: a repository's own configuration runs no code (hooks, fsmonitor,
filters, merge drivers); clear errors when git is missing; the user's index, HEAD,
branches and stash are never touched by a checkpoint or a restore."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.sessions.workspaces import checkpoints, merge, worktrees
from server.sessions.workspaces import git as git_module
from server.sessions.workspaces.changes import diff_trees
from server.sessions.workspaces.checkpoints import Author
from server.sessions.workspaces.git import GitFailed, GitMissing, GitTooOld, run_git
from tests.workspaces.support import git, make_repo, repo_state

WHO = Author("t", "t@example.com")


@pytest.fixture
def armed(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A repository whose config and attributes would run a command that creates
    ``pwned`` if git honoured them."""
    repo = make_repo(tmp_path / "repo")
    pwned = tmp_path / "pwned"
    command = f"touch {pwned}; cat"
    (repo / ".gitattributes").write_text("* filter=evil merge=evil diff=evil\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-q", "-m", "attributes")
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "README.md").write_text("ours\n")
    git(repo, "commit", "-q", "-am", "ours")
    git(repo, "checkout", "-q", "main")
    git(repo, "config", "filter.evil.clean", command)
    git(repo, "config", "filter.evil.smudge", command)
    git(repo, "config", "filter.evil.required", "true")
    git(repo, "config", "merge.evil.driver", f"touch {pwned}; true")
    git(repo, "config", "diff.evil.textconv", command)
    git(repo, "config", "diff.external", f"touch {pwned}")
    git(repo, "config", "core.fsmonitor", f"touch {pwned}")
    hooks = repo / ".git" / "hooks"
    for hook in ("post-checkout", "pre-commit", "post-commit", "reference-transaction"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {pwned}\n")
        (hooks / hook).chmod(0o755)
    yield repo, pwned


def test_repository_config_runs_nothing(armed: tuple[Path, Path], tmp_path: Path) -> None:
    repo, pwned = armed
    (repo / "README.md").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    ref = checkpoints.checkpoint_ref("s", "r1")
    first = checkpoints.checkpoint(repo, "s", ref, WHO, "cp")
    diff_trees(repo, git(repo, "rev-parse", "HEAD"), checkpoints.snapshot(repo, "s"), 10_000)
    checkpoints.restore(repo, "s", git(repo, "rev-parse", "HEAD"))
    made = worktrees.create_worktree(repo, tmp_path / "root", "1234567890ab", first)
    (made.path / "README.md").write_text("theirs\n")
    merge.commit_all(made.path, "1234567890ab", made.branch, "theirs", WHO)
    outcome = merge.merge_branch(repo, made.branch, "side", False, "m", WHO)
    assert outcome.conflicts == ["README.md"]  # a custom merge driver never runs
    worktrees.remove_worktree(repo, made.path, made.branch)
    assert not pwned.exists()


def test_checkpoint_and_restore_leave_the_users_state(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "stashed.txt").write_text("s\n")
    git(repo, "add", "stashed.txt")
    git(repo, "stash", "-q")
    (repo / "README.md").write_text("staged\n")
    git(repo, "add", "README.md")
    (repo / "README.md").write_text("unstaged\n")
    before = repo_state(repo)
    commit = checkpoints.checkpoint(repo, "s", checkpoints.checkpoint_ref("s", "r"), WHO, "cp")
    after = repo_state(repo)
    assert after["index"] == before["index"] and after["head"] == before["head"]
    assert after["stash"] == before["stash"] and after["status"] == before["status"]
    assert git(repo, "show", f"{commit}:README.md") == "unstaged"
    (repo / "README.md").write_text("agent\n")
    (repo / "agent.txt").write_text("agent\n")
    checkpoints.restore(repo, "s", commit)
    assert (repo / "README.md").read_text() == "unstaged\n"
    assert not (repo / "agent.txt").exists()
    restored = repo_state(repo)
    assert restored["index"] == before["index"] and restored["stash"] == before["stash"]
    assert restored["status"] == before["status"]


def test_git_missing_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    git_module.git_version.cache_clear()
    try:
        with pytest.raises(GitMissing, match="git 2.38 or newer"):
            run_git(tmp_path, "status")
    finally:
        git_module.git_version.cache_clear()


def test_git_too_old_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin" / "git"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'git version 2.30.1'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake.parent))
    git_module.git_version.cache_clear()
    try:
        with pytest.raises(GitTooOld, match=r"git 2\.30 is too old.*2\.38"):
            run_git(tmp_path, "status")
    finally:
        git_module.git_version.cache_clear()


def test_arguments_are_never_a_shell(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    pwned = tmp_path / "pwned"
    assert checkpoints.resolve_commit(repo, f"HEAD; touch {pwned}") is None
    assert checkpoints.resolve_commit(repo, "--output=/tmp/x") is None
    assert not pwned.exists()


def test_kill_9_during_a_checkpoint_leaves_the_repository_usable(tmp_path: Path) -> None:
    """A checkpoint killed while git writes the private index: the user's git works at
    once (no index.lock of theirs), and so does the next checkpoint."""
    files = {f"d{i // 100}/f{i}.txt": f"{i}\n" * 20 for i in range(3000)}
    repo = make_repo(tmp_path / "repo", files)
    for name in list(files)[:1500]:
        (repo / name).write_text("changed\n")  # so that `git add` has work to do
    lock = checkpoints.git_dir(repo) / "agent-sessions" / "k.index.lock"
    script = (
        "import sys; from pathlib import Path; "
        "from server.sessions.workspaces import checkpoints\n"
        "while True:\n"
        "    Path(sys.argv[1], 'new.txt').write_text(str(__import__('time').time()))\n"
        "    checkpoints.snapshot(Path(sys.argv[1]), 'k')\n"
    )
    child = subprocess.Popen(  # noqa: S603 - our own interpreter and script
        [sys.executable, "-c", script, str(repo)],
        cwd=Path(__file__).resolve().parents[2],
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not lock.exists():  # the event: git is writing our private index now
            assert child.poll() is None, "the snapshot loop died"
            assert time.monotonic() < deadline, "never saw git write the private index"
        os.killpg(child.pid, signal.SIGKILL)  # the loop and the git it runs, mid-write
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    assert not (repo / ".git" / "index.lock").exists()
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the user's own commit")
    (repo / "after.txt").write_text("after\n")
    commit = checkpoints.checkpoint(repo, "k", checkpoints.checkpoint_ref("s", "r"), WHO, "cp")
    assert "after.txt" in git(repo, "ls-tree", "-r", "--name-only", commit)
    assert not lock.exists()


def test_a_work_tree_moved_by_config_is_never_written(tmp_path: Path) -> None:
    """An agent that sets core.worktree in .git/config cannot make a restore write
    (or delete) files elsewhere."""
    repo = make_repo(tmp_path / "repo")
    commit = checkpoints.checkpoint(repo, "s", checkpoints.checkpoint_ref("s", "r"), WHO, "cp")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.txt").write_text("keep me\n")
    git(repo, "config", "core.worktree", str(elsewhere))
    with pytest.raises(GitFailed, match="not the workspace"):
        checkpoints.restore(repo, "s", commit)
    assert (elsewhere / "precious.txt").read_text() == "keep me\n"
    assert sorted(p.name for p in elsewhere.iterdir()) == ["precious.txt"]


def test_a_redirected_worktree_link_is_refused(tmp_path: Path) -> None:
    """An agent that points its worktree's .git file at another repository cannot make
    a checkpoint write into that repository."""
    repo = make_repo(tmp_path / "repo")
    other = make_repo(tmp_path / "other")
    made = worktrees.create_worktree(
        repo, tmp_path / "root", "abcdef0123456", git(repo, "rev-parse", "HEAD")
    )
    worktrees.finish_creation(tmp_path / "root", "abcdef0123456")
    checkpoints.checkpoint(made.path, "k", checkpoints.checkpoint_ref("s", "r0"), WHO, "cp")
    refs = git(other, "for-each-ref")
    (made.path / ".git").write_text(f"gitdir: {other / '.git'}\n")
    with pytest.raises(GitFailed, match=r"\.git file was changed"):
        checkpoints.checkpoint(made.path, "k", checkpoints.checkpoint_ref("s", "r1"), WHO, "cp")
    assert git(other, "for-each-ref") == refs
    assert not (other / ".git" / "agent-sessions").exists()
