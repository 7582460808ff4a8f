"""Shared by the workspace tests: a git repository with history, git state snapshots."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from server.app import create_app
from server.settings import Settings

GIT_ID = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *GIT_ID, *args], cwd=repo, capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout.strip()


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    """A repository on branch ``main`` with one commit of ``files``."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in (files or {"README.md": "# Proj\n", "src/app.py": "print('hi')\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    (path / ".gitignore").write_text("*.log\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def repo_state(repo: Path) -> dict[str, str]:
    """Everything a refusal must leave as it was: refs, HEAD, index, status, worktrees."""
    index = repo / ".git" / "index"
    return {
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        "head": git(repo, "rev-parse", "HEAD"),
        "index": index.read_bytes().hex() if index.exists() else "",
        "status": git(repo, "status", "--porcelain", "--untracked-files=all"),
        "worktrees": git(repo, "worktree", "list", "--porcelain"),
        "stash": git(repo, "stash", "list"),
    }


@pytest.fixture
def proj(workspace_root: Path) -> Path:
    return make_repo(workspace_root / "proj")


@pytest.fixture
def wt_client(proj: Path, settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as client:
        yield client


@pytest.fixture
def proj_id(wt_client: TestClient) -> str:
    repos = wt_client.get("/api/repos").json()["repos"]
    return str(next(r["id"] for r in repos if r["name"] == "proj"))
