"""API.md "Review" through the TestClient, a real git repository and the demo agent:
the tree and file reads (workspace and commit), hunk and file revert, review comments
sent as a prompt, ``Workspace.merged`` and ``scope``, and every refusal API.md names."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from tests.helpers import assert_error, create_session, is_type, messages, wait_for_message
from tests.server.test_history import run_turn
from tests.workspaces.support import git

LINES = [f"line {n}\n" for n in range(1, 31)]


def worktree(client: TestClient, repo_id: str) -> tuple[str, Path]:
    session = create_session(client, repo_id, isolation="worktree")
    return session["id"], Path(session["workspace"]["path"])


def with_long_file(proj: Path) -> None:
    (proj / "long.txt").write_text("".join(LINES))
    git(proj, "add", "long.txt")
    git(proj, "commit", "-q", "-m", "long")


def test_tree_and_file_of_workspace_and_base(
    wt_client: TestClient, proj_id: str, proj: Path
) -> None:
    sid, path = worktree(wt_client, proj_id)
    (path / "src" / "app.py").write_text("print('changed')\n")
    (path / "new.bin").write_bytes(b"\x00\x01binary")
    top = wt_client.get(f"/api/sessions/{sid}/tree").json()["entries"]
    assert [(e["name"], e["type"]) for e in top] == [
        ("src", "dir"),
        (".gitignore", "file"),
        ("new.bin", "file"),
        ("README.md", "file"),
    ]
    assert top[0] == {"name": "src", "path": "src", "type": "dir", "size": None}
    src = wt_client.get(f"/api/sessions/{sid}/tree", params={"path": "src"}).json()["entries"]
    assert src == [{"name": "app.py", "path": "src/app.py", "type": "file", "size": 17}]
    now = wt_client.get(f"/api/sessions/{sid}/file", params={"path": "src/app.py"})
    assert now.status_code == 200
    assert now.headers["content-type"].startswith("text/plain")
    assert now.text == "print('changed')\n"
    base = wt_client.get(f"/api/sessions/{sid}/file", params={"path": "src/app.py", "ref": "HEAD"})
    assert base.text == "print('hi')\n"
    # an absolute path inside the workspace (as tool cards show them) is the same file
    absolute = wt_client.get(f"/api/sessions/{sid}/file", params={"path": str(path / "README.md")})
    assert absolute.text == "# Proj\n"
    binary = wt_client.get(f"/api/sessions/{sid}/file", params={"path": "new.bin"})
    assert binary.headers["content-type"] == "application/octet-stream"
    assert binary.content == b"\x00\x01binary"
    base_top = wt_client.get(f"/api/sessions/{sid}/tree", params={"ref": "main"}).json()
    assert [e["name"] for e in base_top["entries"]] == ["src", ".gitignore", "README.md"]
    assert base_top["entries"][2]["size"] == 7


def test_file_over_the_embed_limit_is_413_unless_raw(
    make_client: Any, workspace_root: Path, proj: Path
) -> None:
    client = make_client(MAX_EMBED_BYTES="64")
    repo_id = next(r["id"] for r in client.get("/api/repos").json()["repos"] if r["name"] == "proj")
    sid, path = worktree(client, repo_id)
    (path / "big.txt").write_text("x" * 100)
    assert_error(client.get(f"/api/sessions/{sid}/file", params={"path": "big.txt"}), 413)
    raw = client.get(f"/api/sessions/{sid}/file", params={"path": "big.txt", "raw": "true"})
    assert raw.status_code == 200 and raw.text == "x" * 100
    git(path, "add", "big.txt")
    git(path, "commit", "-q", "-m", "big")
    at = {"path": "big.txt", "ref": "HEAD"}
    assert_error(client.get(f"/api/sessions/{sid}/file", params=at), 413, "payload_too_large")
    assert client.get(f"/api/sessions/{sid}/file", params={**at, "raw": "1"}).text == "x" * 100


def test_reads_are_confined(
    wt_client: TestClient, proj_id: str, workspace_root: Path, tmp_path: Path
) -> None:
    sid, path = worktree(wt_client, proj_id)
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    os.symlink(secret, path / "escape.txt")
    os.symlink(tmp_path, path / "escape-dir")
    for route in ("file", "tree"):
        for where in ("../../proj/README.md", str(secret), "escape.txt", "escape-dir", "/etc"):
            response = wt_client.get(f"/api/sessions/{sid}/{route}", params={"path": where})
            if route == "tree" and where == "escape.txt":
                continue  # a link to a file: refused either way below
            assert_error(response, 403, "path_outside_workspace")
        for where in ("../x", "/etc/passwd", "src/../../x"):
            at = {"path": where, "ref": "HEAD"}
            assert_error(wt_client.get(f"/api/sessions/{sid}/{route}", params=at), 403)
    names = [e["name"] for e in wt_client.get(f"/api/sessions/{sid}/tree").json()["entries"]]
    assert "escape.txt" not in names and "escape-dir" not in names and ".git" not in names
    assert_error(wt_client.get(f"/api/sessions/{sid}/file", params={"path": "nope"}), 404)
    assert_error(
        wt_client.get(f"/api/sessions/{sid}/file", params={"path": "nope", "ref": "HEAD"}), 404
    )
    assert_error(wt_client.get(f"/api/sessions/{sid}/file", params={"path": ""}), 422)
    assert_error(wt_client.get(f"/api/sessions/{sid}/file", params={"path": "src"}), 404)
    response = wt_client.get(f"/api/sessions/{sid}/tree", params={"path": "README.md"})
    assert_error(response, 404, "directory_not_found")
    response = wt_client.get(f"/api/sessions/{sid}/tree", params={"ref": "no-such-ref"})
    assert_error(response, 404, "ref_not_found")
    response = wt_client.get(f"/api/sessions/{sid}/tree", params={"ref": "--output=/tmp/x"})
    assert_error(response, 422, "validation_error")
    unknown = f"/api/sessions/{'0' * 8}-0000-0000-0000-{'0' * 12}"
    assert_error(wt_client.get(f"{unknown}/tree"), 404, "session_not_found")
    assert_error(wt_client.get(f"{unknown}/file", params={"path": "x"}), 404, "session_not_found")
    response = wt_client.post(f"{unknown}/changes/revert", json={"path": "x"})
    assert_error(response, 404, "session_not_found")
    comment = {"path": "x", "line": 1, "side": "new", "body": "x"}
    response = wt_client.post(f"{unknown}/review", json={"comments": [comment]})
    assert_error(response, 404, "session_not_found")
    assert_error(wt_client.get("/api/sessions/not-a-uuid/tree"), 422)


def test_revert_one_hunk_then_a_whole_file(wt_client: TestClient, proj_id: str, proj: Path) -> None:
    with_long_file(proj)
    sid, path = worktree(wt_client, proj_id)
    changed = list(LINES)
    changed[1] = "line 2 changed\n"
    changed[25] = "line 26 changed\n"
    (path / "long.txt").write_text("".join(changed))
    (path / "added.txt").write_text("new\n")
    (path / "README.md").unlink()
    before = wt_client.get(f"/api/sessions/{sid}/changes").json()
    assert before["scope"] == "session"
    assert before["patch"].count("@@ -") == 4  # two hunks in long.txt, one each elsewhere
    response = wt_client.post(
        f"/api/sessions/{sid}/changes/revert", json={"path": "long.txt", "hunks": [1]}
    )
    assert response.status_code == 200, response.text
    after = response.json()
    expected = list(LINES)
    expected[1] = "line 2 changed\n"
    assert (path / "long.txt").read_text() == "".join(expected)
    long = next(f for f in after["files"] if f["path"] == "long.txt")
    assert (long["additions"], long["deletions"]) == (1, 1)
    review = wait_for_message(wt_client, sid, is_type("review"))
    assert review["role"] == "system"
    assert review["content"] == {
        "type": "review",
        "action": "revert",
        "path": "long.txt",
        "hunks": [1],
        "by": "client",
    }
    for name in ("long.txt", "added.txt", "README.md"):
        response = wt_client.post(f"/api/sessions/{sid}/changes/revert", json={"path": name})
        assert response.status_code == 200, response.text
    assert (path / "long.txt").read_text() == "".join(LINES)
    assert not (path / "added.txt").exists()
    assert (path / "README.md").read_text() == "# Proj\n"
    assert wt_client.get(f"/api/sessions/{sid}/changes").json()["files"] == []


def test_reverting_an_added_symlink_removes_the_link_only(
    wt_client: TestClient, proj_id: str
) -> None:
    sid, path = worktree(wt_client, proj_id)
    os.symlink("README.md", path / "link.md")
    response = wt_client.post(f"/api/sessions/{sid}/changes/revert", json={"path": "link.md"})
    assert response.status_code == 200, response.text
    assert not os.path.lexists(path / "link.md")
    assert (path / "README.md").read_text() == "# Proj\n"


def test_revert_refusals(wt_client: TestClient, proj_id: str, proj: Path) -> None:
    with_long_file(proj)
    sid, path = worktree(wt_client, proj_id)
    (path / "long.txt").write_text("".join(LINES).replace("line 5\n", "five\n"))
    (path / "blob.bin").write_bytes(b"\x00\x01")
    url = f"/api/sessions/{sid}/changes/revert"
    for hunks in ([1], [0, 7], [-1]):
        response = wt_client.post(url, json={"path": "long.txt", "hunks": hunks})
        assert_error(response, 422, "validation_error")
    assert_error(wt_client.post(url, json={"path": "blob.bin", "hunks": [0]}), 422)
    assert_error(wt_client.post(url, json={"path": "README.md"}), 409, "nothing_to_revert")
    assert_error(wt_client.post(url, json={"path": "../proj/long.txt"}), 403)
    assert_error(wt_client.post(url, json={"hunks": [0]}), 422)
    assert_error(
        wt_client.post(url, content=b"{", headers={"content-type": "application/json"}), 400
    )
    assert "five" in (path / "long.txt").read_text()  # nothing was reverted
    # during a turn (the demo agent waits for the write's permission)
    turn = wt_client.post(f"/api/sessions/{sid}/prompt", json={"text": "write other.txt x"})
    assert turn.status_code == 202
    wait_for_message(wt_client, sid, is_type("permission"))
    assert_error(wt_client.post(url, json={"path": "long.txt"}), 409, "turn_in_progress")
    comment = {"path": "long.txt", "line": 5, "side": "new", "body": "why?"}
    response = wt_client.post(f"/api/sessions/{sid}/review", json={"comments": [comment]})
    assert_error(response, 409, "turn_in_progress")
    assert not any(m["content"]["type"] == "review" for m in messages(wt_client, sid))


def test_review_comments_become_one_prompt(wt_client: TestClient, proj_id: str, proj: Path) -> None:
    with_long_file(proj)
    sid, path = worktree(wt_client, proj_id)
    (path / "long.txt").write_text("".join(LINES).replace("line 5\n", "five\n"))
    body = {
        "comments": [
            {"path": "long.txt", "line": 5, "side": "new", "body": "Spell it as a number."},
            {"path": "long.txt", "line": 5, "side": "old", "body": "This was fine."},
        ],
        "text": "Thanks!",
    }
    body["comments"][0]["line"] = 5.0  # type: ignore[index] # JSON Schema's integer
    response = wt_client.post(f"/api/sessions/{sid}/review", json=body)
    assert response.status_code == 202, response.text
    body["comments"][0]["line"] = 5  # type: ignore[index]
    run_id = response.json()["runId"]
    user = wait_for_message(wt_client, sid, lambda m: m["role"] == "user")
    assert user["runId"] == run_id
    content = user["content"]
    assert content["comments"] == [
        {**body["comments"][0], "text": "five"},  # type: ignore[dict-item]
        {**body["comments"][1], "text": "line 5"},  # type: ignore[dict-item]
    ]
    text = content["text"]
    assert "long.txt:5\n> five\nSpell it as a number." in text
    assert "> line 5\nThis was fine." in text
    assert text.endswith("Thanks!")


def test_review_refusals(wt_client: TestClient, proj_id: str, proj: Path) -> None:
    sid, _path = worktree(wt_client, proj_id)
    url = f"/api/sessions/{sid}/review"

    def comment(**fields: Any) -> dict[str, Any]:
        return {
            "comments": [{"path": "README.md", "line": 1, "side": "new", "body": "x", **fields}]
        }

    for bad in (
        comment(line=0),
        comment(line=2),  # README.md has one line
        comment(side="left"),
        comment(body=" "),
        {"comments": []},
        {"comments": "x"},
    ):
        assert_error(wt_client.post(url, json=bad), 422, "validation_error")
    assert_error(wt_client.post(url, json=comment(path="../../etc/passwd")), 403)
    assert_error(wt_client.post(url, json=comment(path="missing.txt")), 404)
    assert not any(m["role"] == "user" for m in messages(wt_client, sid))


def test_merged_state_and_scope(wt_client: TestClient, proj_id: str, proj: Path) -> None:
    sid, path = worktree(wt_client, proj_id)
    assert wt_client.get(f"/api/sessions/{sid}").json()["workspace"]["merged"] is None
    turn = run_turn(wt_client, sid, "write notes.txt hello", answer="allow")
    assert turn.status == "completed"
    assert (
        wt_client.post(f"/api/sessions/{sid}/commit", json={"message": "notes"}).status_code == 201
    )
    merged = wt_client.post(f"/api/sessions/{sid}/merge", json={}).json()
    state = wt_client.get(f"/api/sessions/{sid}").json()["workspace"]["merged"]
    assert state["commit"] == merged["commit"] == git(proj, "rev-parse", "main")
    assert state["into"] == "main"
    assert state["at"].endswith("Z")
    listed = wt_client.get("/api/sessions").json()["sessions"]
    assert next(s for s in listed if s["id"] == sid)["workspace"]["merged"] == state
    plain = create_session(wt_client, proj_id)
    (proj / "README.md").write_text("changed by someone else\n")
    found = wt_client.get(f"/api/sessions/{plain['id']}/changes").json()
    assert found["scope"] == "workspace"
    assert [f["path"] for f in found["files"]] == ["README.md"]
