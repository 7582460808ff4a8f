"""API.md, Security: confinement. The traversal catalogue (tests/traversal_payloads.py)
against repository registration and against a real demo agent's fs/read_text_file,
fs/write_text_file and terminal/create (cwd) through the real server; nothing outside
changes, nothing outside leaks into any stored message, every refusal is a security event
with the session id and the path. A repository replaced by a symlink after registration
is refused at use."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.helpers import assert_error, create_session, prompt, run_ended, wait_for_message
from tests.security.support import app_for
from tests.traversal_payloads import (
    ESCAPES,
    FORBIDDEN_TEXT,
    OUTSIDE_CONTENTS,
    TRAVERSAL_PAYLOADS,
    make_traversal_tree,
)

LABELS = [label for label, _ in TRAVERSAL_PAYLOADS]
# Leaked bytes of files the agent must never read (passwd: whatever the machine's is).
PASSWD_FIRST_LINE = Path("/etc/passwd").read_text().splitlines()[0]
# Write probes skip these: their targets are system files (/etc/passwd), which a failure of
# confinement would damage on the machine running the tests (we may run as root). Their
# read and terminal probes still run, and every other escape class (.., absolute paths,
# symlinks to files, directories, siblings and /dev/zero) is written to.
SYSTEM_TARGETS = {
    "dotdot_chain",
    "abs_etc_passwd",
    "abs_double_slash",
    "abs_proc_self_root",
    "symlink_fs_root",
    "symlink_fs_root_dotdot",
}


def test_the_catalogue_is_big_enough() -> None:
    assert len(TRAVERSAL_PAYLOADS) >= 30 and len(ESCAPES) >= 30
    assert ESCAPES <= set(LABELS)


def snapshot(outside: Path, root: Path) -> dict[str, Any]:
    """Everything under ``outside`` but the repository: kind, content or target, mode,
    mtime; never following a symlink. Plus /etc/passwd."""
    seen: dict[str, Any] = {
        "/etc/passwd": hashlib.sha256(Path("/etc/passwd").read_bytes()).hexdigest()
    }
    for dirpath, dirnames, filenames in os.walk(outside):
        if Path(dirpath) == root:
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            if path == root:
                continue
            st = path.lstat()
            if path.is_symlink():
                what: Any = ("link", os.readlink(path))
            elif path.is_file():
                what = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
            else:
                what = ("dir" if path.is_dir() else "other", None)
            seen[str(path.relative_to(outside))] = (*what, st.st_mode, st.st_mtime_ns)
    return seen


# -- repository registration ------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, str]:
    return make_traversal_tree(tmp_path / "t")


@pytest.fixture
def registration_client(tmp_path: Path, tree: dict[str, str]) -> Iterator[TestClient]:
    with TestClient(app_for(tmp_path, Path(tree["root"]), AUTO_REGISTER_REPOS="false")) as client:
        yield client


def test_registration_catalogue(
    registration_client: TestClient, tree: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    root, outside = Path(tree["root"]), Path(tree["outside"])
    before = snapshot(outside, root)
    statuses = {}
    with caplog.at_level(logging.WARNING, logger="agent_sessions.security"):
        for label, template in TRAVERSAL_PAYLOADS:
            path = template.format(**tree)
            response = registration_client.post("/api/repos", json={"path": path})
            statuses[label] = response.status_code
            if label in ESCAPES:
                assert_error(response, 403, "path_outside_workspace")
                refusals = [
                    r for r in caplog.records if getattr(r, "event", None) == "path_refused"
                ]
                assert any(r.path == path for r in refusals), (label, refusals)  # type: ignore[attr-defined]
            elif response.status_code != 201:
                assert_error(response, response.status_code)
                assert response.status_code in (403, 422), (label, response.text)
    repos = registration_client.get("/api/repos").json()["repos"]
    for repo in repos:  # whatever was accepted lies inside the root
        assert Path(repo["path"]).parts[: len(root.parts)] == root.parts, repo
    assert snapshot(outside, root) == before
    assert sum(1 for s in statuses.values() if s == 403) >= len(ESCAPES)


def test_a_repository_replaced_by_a_symlink_is_refused_at_use(
    registration_client: TestClient, tree: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    root, outside = Path(tree["root"]), Path(tree["outside"])
    for name, target in (("proj-out", outside / "outside_dir"), ("proj-in", root / "sub")):
        (root / name).mkdir()
        repo = registration_client.post("/api/repos", json={"path": name}).json()
        (root / name).rmdir()
        (root / name).symlink_to(target)
        with caplog.at_level(logging.WARNING, logger="agent_sessions.security"):
            response = registration_client.post("/api/sessions", json={"repoId": repo["id"]})
        assert_error(response, 403, "path_outside_workspace")
        assert any(
            getattr(r, "event", None) == "path_refused"
            and repo["path"] in str(getattr(r, "path", ""))
            for r in caplog.records
        ), caplog.records
    listed = registration_client.get("/api/sessions").json()
    assert listed["sessions"] == [] or all(s["status"] != "active" for s in listed["sessions"])


# -- the agent's requests ---------------------------------------------------------------


def probes_for(tree: dict[str, str]) -> list[tuple[str, str, str]]:
    """(label, op, path): each payload as given and, when relative, joined to the
    repository the way an agent makes absolute paths; for read, write and terminal."""
    found = []
    for label, template in TRAVERSAL_PAYLOADS:
        given = template.format(**tree)
        forms = [given] if given.startswith("/") else [given, os.path.join(tree["root"], given)]
        for op in ("read", "write", "terminal"):
            if op == "write" and label in SYSTEM_TARGETS:
                continue
            found.extend((label, op, path) for path in forms)
    return found


@pytest.fixture
def agent_client(tmp_path: Path, tree: dict[str, str]) -> Iterator[TestClient]:
    env = {"AUTO_REGISTER_REPOS": "false"}
    with TestClient(app_for(tmp_path, Path(tree["outside"]), **env)) as client:
        yield client


def stored_text(client: TestClient, session_id: str) -> str:
    listed = client.get(
        f"/api/sessions/{session_id}/messages", params={"raw": "true", "limit": 5000}
    )
    exported = client.get(f"/api/sessions/{session_id}/export")
    assert listed.status_code == 200 and exported.status_code == 200
    return listed.text + exported.text


def run_probes(
    client: TestClient, session_id: str, probes: list[tuple[str, str]]
) -> list[dict[str, Any]]:
    run_id = prompt(client, session_id, "probe-all " + json.dumps(probes))
    wait_for_message(client, session_id, run_ended(run_id), timeout=60)
    tool = wait_for_message(
        client,
        session_id,
        lambda m: (
            m["content"].get("toolCallId") == "call_probe"
            and m["content"]["status"] == "completed"
            and m["runId"] == run_id
        ),
    )
    results: list[dict[str, Any]] = tool["content"]["result"]["results"]
    assert [(r["op"], r["path"]) for r in results] == [tuple(p) for p in probes]
    return results


def test_agent_probes_catalogue(
    agent_client: TestClient, tree: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    root, outside = Path(tree["root"]), Path(tree["outside"])
    repo = agent_client.post("/api/repos", json={"path": "repo"}).json()
    session = create_session(agent_client, repo["id"])
    before = snapshot(outside, root)
    probes = probes_for(tree)
    assert len({label for label, _, _ in probes}) >= 30
    with caplog.at_level(logging.WARNING, logger="agent_sessions.security"):
        results = run_probes(agent_client, session["id"], [(op, path) for _, op, path in probes])
    refusals = [r for r in caplog.records if getattr(r, "event", None) == "path_refused"]
    allowed_texts = {"inside\n", "inner\n", "written by a demo agent probe\n"}
    for (label, op, path), result in zip(probes, results, strict=True):
        if label in ESCAPES:
            assert result["ok"] is False, (label, op, path, result)
            assert isinstance(result["code"], int) and result["code"] < 0, result
            assert any(r.path == path and r.session_id == session["id"] for r in refusals), (
                label,
                op,
                path,
            )  # type: ignore[attr-defined]
        if result["ok"] and op == "read":
            assert result["content"] in allowed_texts, (label, path, result)
        if result["ok"] and op == "terminal":
            ran_in = Path(result["content"].rstrip("\n"))
            assert ran_in.parts[: len(root.parts)] == root.parts, (label, path, result)
    assert snapshot(outside, root) == before
    text = stored_text(agent_client, session["id"])
    for secret in (*OUTSIDE_CONTENTS, PASSWD_FIRST_LINE):
        assert secret not in text
    assert FORBIDDEN_TEXT in (outside / "secret.txt").read_text()  # the outside file is intact
    agent_client.delete(f"/api/sessions/{session['id']}")


def test_agent_requests_after_the_repository_is_swapped(
    agent_client: TestClient, tree: dict[str, str]
) -> None:
    root, outside = Path(tree["root"]), Path(tree["outside"])
    repo = agent_client.post("/api/repos", json={"path": "repo"}).json()
    session = create_session(agent_client, repo["id"])
    inside = os.path.join(tree["root"], "inside.txt")
    [ok] = run_probes(agent_client, session["id"], [("read", inside)])
    assert ok["ok"] is True and ok["content"] == "inside\n"
    os.rename(root, outside / "repo-moved")
    os.symlink(outside / "outside_dir", root)  # the repository path now leads outside
    (outside / "outside_dir" / "inside.txt").write_text(FORBIDDEN_TEXT)
    results = run_probes(
        agent_client,
        session["id"],
        [("read", inside), ("write", inside), ("terminal", tree["root"])],
    )
    assert [r["ok"] for r in results] == [False, False, False], results
    assert (outside / "outside_dir" / "inside.txt").read_text() == FORBIDDEN_TEXT
    assert FORBIDDEN_TEXT not in stored_text(agent_client, session["id"])
    agent_client.delete(f"/api/sessions/{session['id']}")
