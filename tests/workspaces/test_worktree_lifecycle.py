"""Worktrees across rewind, fork, restart and crashes."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from server.app import create_app
from server.sessions.workspaces import checkpoints, worktrees
from server.settings import Settings
from tests.helpers import assert_error, create_session
from tests.server.test_history import run_turn
from tests.workspaces.support import git, make_repo, repo_state
from tests.workspaces.test_worktree_api import complete, worktree_session, write


def test_rewind_restores_files(wt_client: TestClient, proj_id: str, proj: Path) -> None:
    session = worktree_session(wt_client, proj_id)
    sid, path = session["id"], Path(session["workspace"]["path"])
    write(wt_client, sid, "notes.txt", "one")
    point = wt_client.get(f"/api/sessions/{sid}").json()["lastSeq"]
    write(wt_client, sid, "notes.txt", "two")
    write(wt_client, sid, "extra.txt", "new file")
    (path / "build.log").write_text("ignored stays\n")
    response = wt_client.post(
        f"/api/sessions/{sid}/rewind", json={"toSeq": point, "restoreFiles": True}
    )
    assert response.status_code == 200, response.text
    assert (path / "notes.txt").read_text() == "one"
    assert not (path / "extra.txt").exists()
    assert (path / "build.log").read_text() == "ignored stays\n"
    assert (path / "README.md").read_text() == "# Proj\n"
    # the conversation part is the plain rewind; a later turn works on the restored files
    assert run_turn(wt_client, sid, "hello").status == "completed"
    assert_error(
        wt_client.post(f"/api/sessions/{sid}/rewind", json={"toSeq": 0, "restoreFiles": "yes"}),
        422,
        "validation_error",
    )


def test_rewind_restores_files_without_isolation(
    wt_client: TestClient, proj_id: str, proj: Path
) -> None:
    before = repo_state(proj)
    session = create_session(wt_client, proj_id)
    sid = session["id"]
    write(wt_client, sid, "README.md", "edited")
    write(wt_client, sid, "new.txt", "created")
    response = wt_client.post(
        f"/api/sessions/{sid}/rewind", json={"toSeq": 0, "restoreFiles": True}
    )
    assert response.status_code == 200, response.text
    assert (proj / "README.md").read_text() == "# Proj\n"
    assert not (proj / "new.txt").exists()
    after = repo_state(proj)
    assert after["index"] == before["index"] and after["head"] == before["head"]
    assert after["status"] == before["status"]


def test_rewind_without_restore_keeps_files(wt_client: TestClient, proj_id: str) -> None:
    session = worktree_session(wt_client, proj_id)
    path = Path(session["workspace"]["path"])
    write(wt_client, session["id"], "notes.txt", "kept")
    wt_client.post(f"/api/sessions/{session['id']}/rewind", json={"toSeq": 0})
    assert (path / "notes.txt").read_text() == "kept"


def test_fork_gets_its_own_worktree_from_the_fork_point(
    wt_client: TestClient, proj_id: str, proj: Path
) -> None:
    session = worktree_session(wt_client, proj_id)
    sid = session["id"]
    write(wt_client, sid, "notes.txt", "one")
    point = wt_client.get(f"/api/sessions/{sid}").json()["lastSeq"]
    write(wt_client, sid, "notes.txt", "two")
    response = wt_client.post(f"/api/sessions/{sid}/fork", json={"uptoSeq": point})
    assert response.status_code == 201, response.text
    fork = response.json()["workspace"]
    assert fork["isolation"] == "worktree" and fork["path"] != session["workspace"]["path"]
    assert fork["branch"] != session["workspace"]["branch"]
    assert fork["baseCommit"] == session["workspace"]["baseCommit"]
    assert (Path(fork["path"]) / "notes.txt").read_text() == "one"
    assert (Path(session["workspace"]["path"]) / "notes.txt").read_text() == "two"
    whole = wt_client.post(f"/api/sessions/{sid}/fork", json={}).json()["workspace"]
    assert (Path(whole["path"]) / "notes.txt").read_text() == "two"


def test_a_restart_finds_the_worktrees(
    proj: Path, settings: Settings, workspace_root: Path
) -> None:
    with TestClient(create_app(settings)) as client:
        repo_id = next(
            r["id"] for r in client.get("/api/repos").json()["repos"] if r["name"] == "proj"
        )
        session = worktree_session(client, repo_id)
        write(client, session["id"], "notes.txt", "before")
    with TestClient(create_app(settings)) as client:
        again = client.get(f"/api/sessions/{session['id']}").json()
        assert again["workspace"] == session["workspace"]
        write(client, session["id"], "after.txt", "after restart")
        path = Path(session["workspace"]["path"])
        assert (path / "after.txt").read_text() == "after restart"
        assert not (proj / "after.txt").exists()
        files = {
            f["path"] for f in client.get(f"/api/sessions/{session['id']}/changes").json()["files"]
        }
        assert files == {"notes.txt", "after.txt"}


def test_a_half_made_worktree_is_cleaned_up_at_start(
    proj: Path, settings: Settings, workspace_root: Path
) -> None:
    root = workspace_root.resolve()
    session_id = "0badc0de-0000-4000-8000-000000000000"
    head = git(proj, "rev-parse", "HEAD")
    made = worktrees.create_worktree(proj, root, session_id, head)  # no finish_creation: cut short
    (made.path / "README.md").unlink()  # as if killed mid-checkout
    assert made.path.is_dir()
    with TestClient(create_app(settings)) as client:
        assert client.get("/healthz").status_code == 200
        assert not made.path.exists()
        assert made.branch not in git(proj, "branch", "--list")
        assert git(proj, "worktree", "list", "--porcelain").count("worktree ") == 1
        assert list((root / ".worktrees").glob(".*.creating")) == []
        assert git(proj, "status", "--porcelain") == ""


def test_a_killed_checkpoint_leaves_no_lock_that_blocks(
    wt_client: TestClient, proj_id: str, proj: Path
) -> None:
    session = create_session(wt_client, proj_id)
    sid = session["id"]
    write(wt_client, sid, "a.txt", "a")
    lock = checkpoints.git_dir(proj) / "agent-sessions" / f"{sid}.index.lock"
    lock.write_text("left by a kill -9")  # what a killed `git add` on our index leaves
    assert not (proj / ".git" / "index.lock").exists()
    git(proj, "add", "a.txt")  # the user's own git keeps working
    git(proj, "commit", "-q", "-m", "user commit")
    run_id = write(wt_client, sid, "b.txt", "b")  # and the next checkpoint too
    assert git(proj, "rev-parse", f"refs/agent-sessions/{sid}/{run_id}")
    assert not lock.exists()


def test_plain_directory_sessions_take_no_checkpoints(
    wt_client: TestClient, workspace_root: Path
) -> None:
    (workspace_root / "plain").mkdir()
    repo = wt_client.post("/api/repos", json={"path": "plain"}).json()
    session = create_session(wt_client, repo["id"])
    write(wt_client, session["id"], "x.txt", "x")
    assert (workspace_root / "plain" / "x.txt").read_text() == "x"


def test_default_isolation_worktree(
    proj: Path, make_settings: object, workspace_root: Path
) -> None:
    settings = make_settings(DEFAULT_ISOLATION="worktree")  # type: ignore[operator]
    make_repo(workspace_root / "second")
    (workspace_root / "plain").mkdir()
    with TestClient(create_app(settings)) as client:
        repos = {r["name"]: r["id"] for r in client.get("/api/repos").json()["repos"]}
        session = create_session(client, repos["proj"])
        assert session["workspace"]["isolation"] == "worktree"
        plain = client.post("/api/repos", json={"path": "plain"}).json()
        # the default never makes a plain directory unusable
        assert create_session(client, plain["id"])["workspace"]["isolation"] == "none"
        assert (
            create_session(client, repos["proj"], isolation="none")["workspace"]["isolation"]
            == "none"
        )
        complete(client, session["id"])
