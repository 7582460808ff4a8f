"""API.md "Worktrees and changes" through the TestClient and the demo agent: isolated
sessions, checkpoints, changes, commit, merge, delete, and every refusal (with the
repository left exactly as it was)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from tests.helpers import assert_error, create_session
from tests.server.test_history import run_turn
from tests.workspaces.support import git, repo_state


def worktree_session(client: TestClient, repo_id: str, **body: Any) -> dict[str, Any]:
    return create_session(client, repo_id, isolation="worktree", **body)


def write(client: TestClient, session_id: str, path: str, text: str) -> str:
    turn = run_turn(client, session_id, f"write {path} {text}", answer="allow")
    assert turn.status == "completed", turn
    return str(turn.run_id)


def complete(client: TestClient, session_id: str) -> None:
    assert client.post(f"/api/sessions/{session_id}/complete").status_code == 200


def test_isolated_session_gets_its_own_worktree_and_branch(
    wt_client: TestClient, proj_id: str, proj: Path, workspace_root: Path
) -> None:
    head = git(proj, "rev-parse", "HEAD")
    session = worktree_session(wt_client, proj_id)
    space = session["workspace"]
    hex8 = session["id"].replace("-", "")[:8]
    assert space == {
        "path": str(workspace_root.resolve() / ".worktrees" / session["id"]),
        "isolation": "worktree",
        "branch": f"agent/{hex8}",
        "baseRef": "main",
        "baseCommit": head,
        "merged": None,
    }
    write(wt_client, session["id"], "notes.txt", "hello")
    assert (Path(space["path"]) / "notes.txt").read_text() == "hello"
    assert not (proj / "notes.txt").exists()  # the repository itself is untouched
    assert git(proj, "rev-parse", f"agent/{hex8}") == head
    # never auto-registered as a repository
    names = {r["name"] for r in wt_client.get("/api/repos").json()["repos"]}
    assert session["id"] not in names


def test_plain_session_records_base_commit(wt_client: TestClient, proj_id: str, proj: Path) -> None:
    session = create_session(wt_client, proj_id)
    assert session["workspace"] == {
        "path": str(proj.resolve()),
        "isolation": "none",
        "branch": None,
        "baseRef": "main",
        "baseCommit": git(proj, "rev-parse", "HEAD"),
        "merged": None,
    }


def test_isolation_on_a_plain_directory_is_422(wt_client: TestClient, workspace_root: Path) -> None:
    (workspace_root / "plain").mkdir()
    repo = wt_client.post("/api/repos", json={"path": "plain"}).json()
    response = wt_client.post("/api/sessions", json={"repoId": repo["id"], "isolation": "worktree"})
    assert_error(response, 422, "not_a_git_repo")
    assert not (workspace_root / ".worktrees").exists() or not any(
        (workspace_root / ".worktrees").iterdir()
    )
    assert wt_client.get("/api/sessions").json()["total"] == 0


def test_unknown_base_ref_is_422_and_leaves_the_repository(
    wt_client: TestClient, proj_id: str, proj: Path
) -> None:
    before = repo_state(proj)
    for ref in ("no-such-branch", "--help"):
        response = wt_client.post(
            "/api/sessions", json={"repoId": proj_id, "isolation": "worktree", "baseRef": ref}
        )
        assert_error(response, 422, "validation_error")
        assert response.json()["error"]["details"]["field"] == "baseRef"
    assert_error(
        wt_client.post("/api/sessions", json={"repoId": proj_id, "isolation": "sandbox"}),
        422,
        "validation_error",
    )
    assert repo_state(proj) == before
    assert wt_client.get("/api/sessions").json()["total"] == 0


def test_base_ref_names_the_starting_point(wt_client: TestClient, proj_id: str, proj: Path) -> None:
    first = git(proj, "rev-parse", "HEAD")
    (proj / "later.txt").write_text("later\n")
    git(proj, "add", "later.txt")
    git(proj, "commit", "-q", "-m", "later")
    session = worktree_session(wt_client, proj_id, baseRef=first)
    assert session["workspace"]["baseCommit"] == first
    assert session["workspace"]["baseRef"] == first
    assert not (Path(session["workspace"]["path"]) / "later.txt").exists()
    write(wt_client, session["id"], "notes.txt", "x")
    wt_client.post(f"/api/sessions/{session['id']}/commit", json={"message": "x"})
    before = repo_state(proj)
    # a base that is no branch: merge needs `into`
    response = wt_client.post(f"/api/sessions/{session['id']}/merge", json={})
    assert_error(response, 422, "validation_error")
    assert response.json()["error"]["details"]["field"] == "into"
    assert repo_state(proj) == before


def test_two_isolated_sessions_do_not_touch_each_other(wt_client: TestClient, proj_id: str) -> None:
    one = worktree_session(wt_client, proj_id)
    two = worktree_session(wt_client, proj_id)
    write(wt_client, one["id"], "README.md", "one")
    write(wt_client, two["id"], "README.md", "two")
    assert (Path(one["workspace"]["path"]) / "README.md").read_text() == "one"
    assert (Path(two["workspace"]["path"]) / "README.md").read_text() == "two"


def test_checkpoints_and_changes(wt_client: TestClient, proj_id: str, proj: Path) -> None:
    before = repo_state(proj)
    session = worktree_session(wt_client, proj_id)
    sid, path = session["id"], Path(session["workspace"]["path"])
    first = write(wt_client, sid, "notes.txt", "hello")
    ref = git(proj, "for-each-ref", "--format=%(refname)", f"refs/agent-sessions/{sid}/")
    assert ref == f"refs/agent-sessions/{sid}/{first}"
    # the checkpoint holds the state before the turn: no notes.txt yet
    assert "notes.txt" not in git(proj, "ls-tree", "-r", "--name-only", ref)
    second = write(wt_client, sid, "README.md", "changed")
    (path / "debug.log").write_text("ignored\n")

    whole = wt_client.get(f"/api/sessions/{sid}/changes").json()
    assert whole["baseCommit"] == session["workspace"]["baseCommit"]
    assert whole["truncated"] is False
    files = {f["path"]: f for f in whole["files"]}
    assert set(files) == {"notes.txt", "README.md"}
    assert files["notes.txt"] == {
        "path": "notes.txt",
        "oldPath": None,
        "status": "added",
        "additions": 1,
        "deletions": 0,
        "binary": False,
    }
    assert files["README.md"]["status"] == "modified"
    assert "+hello" in whole["patch"] and "+changed" in whole["patch"]

    one = wt_client.get(f"/api/sessions/{sid}/changes", params={"run": first}).json()
    assert [f["path"] for f in one["files"]] == ["notes.txt"]
    two = wt_client.get(f"/api/sessions/{sid}/changes", params={"run": second}).json()
    assert [f["path"] for f in two["files"]] == ["README.md"]

    patch = wt_client.get(f"/api/sessions/{sid}/changes", params={"format": "patch"})
    assert patch.headers["content-type"].startswith("text/x-diff")
    assert patch.text == whole["patch"]
    # the user's repository: index, HEAD, branches (bar the session's), stash untouched
    after = repo_state(proj)
    assert after["head"] == before["head"] and after["index"] == before["index"]
    assert after["stash"] == before["stash"] and after["status"] == before["status"]


def test_changes_refusals(wt_client: TestClient, proj_id: str, workspace_root: Path) -> None:
    session = worktree_session(wt_client, proj_id)
    sid = session["id"]
    assert_error(
        wt_client.get(f"/api/sessions/{sid}/changes", params={"run": session["repoId"]}),
        404,
        "run_not_found",
    )
    assert_error(
        wt_client.get(f"/api/sessions/{sid}/changes", params={"format": "html"}),
        422,
        "validation_error",
    )
    (workspace_root / "plain").mkdir()
    plain = wt_client.post("/api/repos", json={"path": "plain"}).json()
    other = create_session(wt_client, plain["id"])
    assert other["workspace"]["baseCommit"] is None
    assert_error(wt_client.get(f"/api/sessions/{other['id']}/changes"), 422, "not_a_git_repo")


def test_renames_and_binary_files(wt_client: TestClient, proj_id: str) -> None:
    session = worktree_session(wt_client, proj_id)
    path = Path(session["workspace"]["path"])
    (path / "src" / "app.py").rename(path / "src" / "main.py")
    (path / "logo.bin").write_bytes(bytes(range(256)) * 4)
    found = wt_client.get(f"/api/sessions/{session['id']}/changes").json()
    files = {f["path"]: f for f in found["files"]}
    assert files["src/main.py"]["status"] == "renamed"
    assert files["src/main.py"]["oldPath"] == "src/app.py"
    assert files["logo.bin"]["binary"] is True
    assert "Binary files" in found["patch"] and "\x00" not in found["patch"]


def test_commit(wt_client: TestClient, proj_id: str, proj: Path) -> None:
    session = worktree_session(wt_client, proj_id)
    sid, branch = session["id"], session["workspace"]["branch"]
    path = Path(session["workspace"]["path"])
    before = repo_state(proj)
    assert_error(
        wt_client.post(f"/api/sessions/{sid}/commit", json={"message": "x"}),
        409,
        "nothing_to_commit",
    )
    assert repo_state(proj) == before
    write(wt_client, sid, "notes.txt", "hello")
    response = wt_client.post(f"/api/sessions/{sid}/commit", json={"message": "Add notes"})
    assert response.status_code == 201, response.text
    body = response.json()
    assert git(proj, "rev-parse", branch) == body["commit"]
    assert [f["path"] for f in body["files"]] == ["notes.txt"]
    assert git(proj, "log", "-1", "--format=%an <%ae> %s", branch) == (
        "agent-sessions <agent-sessions@localhost> Add notes"
    )
    assert git(path, "status", "--porcelain") == ""  # the worktree's index follows
    assert git(proj, "rev-parse", "main") == before["head"]
    assert_error(
        wt_client.post(f"/api/sessions/{sid}/commit", json={"message": "again"}),
        409,
        "nothing_to_commit",
    )
    assert_error(wt_client.post(f"/api/sessions/{sid}/commit", json={}), 422, "validation_error")


def test_commit_and_merge_need_a_worktree(wt_client: TestClient, proj_id: str, proj: Path) -> None:
    session = create_session(wt_client, proj_id)
    before = repo_state(proj)
    assert_error(
        wt_client.post(f"/api/sessions/{session['id']}/commit", json={"message": "x"}),
        409,
        "not_a_worktree",
    )
    assert_error(
        wt_client.post(f"/api/sessions/{session['id']}/merge", json={}), 409, "not_a_worktree"
    )
    complete(wt_client, session["id"])
    assert_error(wt_client.delete(f"/api/sessions/{session['id']}/worktree"), 409, "not_a_worktree")
    assert repo_state(proj) == before


def test_merge_and_squash(wt_client: TestClient, proj_id: str, proj: Path) -> None:
    base = git(proj, "rev-parse", "main")
    session = worktree_session(wt_client, proj_id)
    sid = session["id"]
    write(wt_client, sid, "notes.txt", "hello")
    commit = wt_client.post(f"/api/sessions/{sid}/commit", json={"message": "notes"}).json()
    response = wt_client.post(f"/api/sessions/{sid}/merge", json={})
    assert response.status_code == 200, response.text
    merged = response.json()
    assert merged["into"] == "main"
    assert git(proj, "rev-parse", "main") == merged["commit"]
    assert git(proj, "rev-list", "--parents", "-n1", "main").split()[1:] == [
        base,
        commit["commit"],
    ]
    # main was checked out and clean: its files and index followed
    assert (proj / "notes.txt").read_text() == "hello"
    assert git(proj, "status", "--porcelain") == ""
    assert_error(wt_client.post(f"/api/sessions/{sid}/merge", json={}), 409, "nothing_to_commit")

    other = worktree_session(wt_client, proj_id)
    write(wt_client, other["id"], "other.txt", "x")
    wt_client.post(f"/api/sessions/{other['id']}/commit", json={"message": "other"})
    before = git(proj, "rev-parse", "main")
    squashed = wt_client.post(
        f"/api/sessions/{other['id']}/merge", json={"strategy": "squash", "message": "Squash"}
    ).json()
    assert git(proj, "rev-list", "--parents", "-n1", "main").split()[1:] == [before]
    assert git(proj, "log", "-1", "--format=%s", "main") == "Squash"
    assert squashed["commit"] == git(proj, "rev-parse", "main")


def test_merge_conflict_leaves_everything(wt_client: TestClient, proj_id: str, proj: Path) -> None:
    session = worktree_session(wt_client, proj_id)
    sid = session["id"]
    write(wt_client, sid, "README.md", "theirs")
    wt_client.post(f"/api/sessions/{sid}/commit", json={"message": "theirs"})
    (proj / "README.md").write_text("ours\n")
    git(proj, "commit", "-q", "-am", "ours")
    before = repo_state(proj)
    response = wt_client.post(f"/api/sessions/{sid}/merge", json={"into": "main"})
    assert_error(response, 409, "merge_conflict")
    assert response.json()["error"]["details"]["files"] == ["README.md"]
    assert repo_state(proj) == before
    assert (proj / "README.md").read_text() == "ours\n"


def test_merge_into_a_dirty_checkout_is_refused(
    wt_client: TestClient, proj_id: str, proj: Path
) -> None:
    session = worktree_session(wt_client, proj_id)
    sid = session["id"]
    write(wt_client, sid, "notes.txt", "hello")
    wt_client.post(f"/api/sessions/{sid}/commit", json={"message": "notes"})
    (proj / "README.md").write_text("local edit\n")
    before = repo_state(proj)
    assert_error(wt_client.post(f"/api/sessions/{sid}/merge", json={}), 409, "target_dirty")
    assert repo_state(proj) == before
    assert not (proj / "notes.txt").exists()
    assert_error(
        wt_client.post(f"/api/sessions/{sid}/merge", json={"into": "nope"}),
        422,
        "validation_error",
    )
    assert_error(
        wt_client.post(f"/api/sessions/{sid}/merge", json={"strategy": "rebase"}),
        422,
        "validation_error",
    )


def test_merge_into_a_branch_not_checked_out(
    wt_client: TestClient, proj_id: str, proj: Path
) -> None:
    git(proj, "branch", "release")
    session = worktree_session(wt_client, proj_id)
    write(wt_client, session["id"], "notes.txt", "hello")
    wt_client.post(f"/api/sessions/{session['id']}/commit", json={"message": "notes"})
    (proj / "README.md").write_text("local edit\n")  # main is dirty; release is not out
    merged = wt_client.post(f"/api/sessions/{session['id']}/merge", json={"into": "release"}).json()
    assert git(proj, "rev-parse", "release") == merged["commit"]
    assert (proj / "README.md").read_text() == "local edit\n"


def test_delete_worktree(wt_client: TestClient, proj_id: str, proj: Path) -> None:
    session = worktree_session(wt_client, proj_id)
    sid, path = session["id"], Path(session["workspace"]["path"])
    branch = session["workspace"]["branch"]
    before = repo_state(proj)
    assert_error(wt_client.delete(f"/api/sessions/{sid}/worktree"), 409, "session_active")
    assert repo_state(proj) == before and path.is_dir()
    complete(wt_client, sid)
    assert path.is_dir()  # an ended session's worktree stays until deleted
    assert wt_client.delete(f"/api/sessions/{sid}/worktree").status_code == 204
    assert not path.exists()
    assert git(proj, "rev-parse", branch)  # the branch stays
    assert str(path) not in git(proj, "worktree", "list")
    other = worktree_session(wt_client, proj_id)
    complete(wt_client, other["id"])
    response = wt_client.delete(
        f"/api/sessions/{other['id']}/worktree", params={"deleteBranch": "true"}
    )
    assert response.status_code == 204
    assert other["workspace"]["branch"] not in git(proj, "branch", "--list")


def test_deleting_the_repository_removes_its_worktrees(
    wt_client: TestClient, proj_id: str, proj: Path
) -> None:
    session = worktree_session(wt_client, proj_id)
    path = Path(session["workspace"]["path"])
    assert_error(wt_client.delete(f"/api/repos/{proj_id}"), 409, "repo_in_use")
    assert path.is_dir()
    complete(wt_client, session["id"])
    assert wt_client.delete(f"/api/repos/{proj_id}").status_code == 204
    assert not path.exists()
    assert git(proj, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert git(proj, "for-each-ref", "refs/agent-sessions/") == ""


def test_commit_and_restore_are_refused_while_a_turn_runs(
    wt_client: TestClient, proj_id: str, proj: Path
) -> None:
    session = worktree_session(wt_client, proj_id)
    sid, path = session["id"], Path(session["workspace"]["path"])
    write(wt_client, sid, "notes.txt", "one")
    run = wt_client.post(f"/api/sessions/{sid}/prompt", json={"text": "slow 40"})
    assert run.status_code == 202  # the turn runs from here until it ends
    before = repo_state(proj)
    assert_error(
        wt_client.post(f"/api/sessions/{sid}/commit", json={"message": "now"}),
        409,
        "turn_in_progress",
    )
    assert_error(
        wt_client.post(f"/api/sessions/{sid}/rewind", json={"toSeq": 0, "restoreFiles": True}),
        409,
        "turn_in_progress",
    )
    assert (path / "notes.txt").read_text() == "one"
    assert repo_state(proj)["refs"] == before["refs"]
    assert wt_client.post(f"/api/sessions/{sid}/cancel").status_code == 202


def review_messages(client: TestClient, session_id: str) -> list[dict[str, Any]]:
    messages = client.get(f"/api/sessions/{session_id}/messages").json()["messages"]
    return [m["content"] for m in messages if m["content"]["type"] == "review"]


def test_commit_and_merge_leave_a_line_in_the_conversation(
    wt_client: TestClient, proj_id: str, proj: Path
) -> None:
    """API.md "Who did what": commits and merges carry ``by`` in their content (null
    without users); the conversation shows what was committed and merged, and where."""
    session = worktree_session(wt_client, proj_id)
    sid, branch = session["id"], session["workspace"]["branch"]
    write(wt_client, sid, "notes.txt", "hello")
    commit = wt_client.post(f"/api/sessions/{sid}/commit", json={"message": "notes"}).json()
    refused = wt_client.post(f"/api/sessions/{sid}/commit", json={"message": "again"})
    assert refused.status_code == 409  # nothing to commit: nothing recorded either
    merged = wt_client.post(f"/api/sessions/{sid}/merge", json={"strategy": "squash"}).json()
    assert review_messages(wt_client, sid) == [
        {
            "type": "review",
            "action": "commit",
            "commit": commit["commit"],
            "branch": branch,
            "files": ["notes.txt"],
            "by": None,
        },
        {
            "type": "review",
            "action": "merge",
            "commit": merged["commit"],
            "into": "main",
            "strategy": "squash",
            "by": None,
        },
    ]
    assert git(proj, "rev-parse", "main") == merged["commit"]
