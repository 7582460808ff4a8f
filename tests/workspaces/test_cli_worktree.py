"""``agent-sessions chat --worktree`` with ``/diff``, ``/commit MSG`` and ``/merge``,
as a subprocess against a real server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.conftest import LiveServer
from tests.test_cli import cli
from tests.workspaces.support import git, make_repo


def test_chat_in_a_worktree_diff_commit_merge(
    live_server: Callable[..., LiveServer], workspace_root: Path
) -> None:
    proj = make_repo(workspace_root / "proj")
    server = live_server()
    script = (
        "write notes.txt hello\n1\n/diff\n/commit\n/commit Add notes\n/commit again\n"
        "/merge\n/quit\n"
    )
    chat = cli(server, "chat", "--repo", "proj", "--worktree", stdin=script)
    assert chat.returncode == 0, chat.stderr
    assert "in its own worktree on branch agent/" in chat.stderr
    out = chat.stdout
    assert "1 file(s) changed since" in out and "A notes.txt  +1 -0" in out
    assert "+hello" in out
    assert "usage: /commit MESSAGE" in out
    assert "committed " in out
    assert "the server refused: The worktree has no change to commit" in out
    assert "merged into main as " in out
    assert (proj / "notes.txt").read_text() == "hello"
    assert git(proj, "log", "-1", "--format=%s", "main").startswith("Merge agent/")


def test_worktree_goes_with_repo(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    result = cli(server, "chat", "--resume", "00000000-0000-4000-8000-000000000000", "--worktree")
    assert result.returncode != 0
    assert "--worktree goes with --repo" in result.stderr
