"""Issue 17, item 1: over-long paths are a clear 4xx everywhere a path comes in.

A component longer than the file system's NAME_MAX, a path longer than PATH_MAX (thousands
of short components) and a path of a megabyte: repository registration answers 422
``validation_error`` (403 ``path_outside_workspace`` when the path leaves the root), the
agent's fs/* requests and a terminal's cwd get a JSON-RPC error, and nothing is created on
disk. The megabyte of ``a/a/a/...`` used to hold the event loop for minutes: realpath
lstat()s every prefix, quadratic in the number of components.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from agent_bridge.workspace import FileRefused, PathOutsideWorkspace, Workspace
from tests.helpers import assert_error, create_session, prompt, run_ended, wait_for_message
from tests.security.support import app_for

INVALID_PARAMS = -32602
LONG_NAME = "a" * 5000  # one component far over NAME_MAX (255)
MANY_COMPONENTS = "/".join(["a"] * 3000)  # 5999 bytes: over PATH_MAX (4096)
HUGE = "a/" * 400_000  # 800 kB, within MAX_BODY_BYTES: quadratic work for realpath


def inside_payloads(root: Path) -> dict[str, str]:
    """Over-long paths that stay inside the root, as an agent or a client spells them."""
    return {
        "long_name": LONG_NAME,
        "long_name_abs": f"{root}/{LONG_NAME}",
        "long_name_under_existing": f"sub/{LONG_NAME}/x.txt",
        "many_components": MANY_COMPONENTS,
        "many_components_abs": f"{root}/{MANY_COMPONENTS}",
        "huge": HUGE,
    }


def outside_payloads(root: Path) -> dict[str, str]:
    """Over-long paths that leave the root."""
    return {
        "many_components_from_fs_root": "/a" * 3000,
        "long_name_beside_root": f"{root}/../{LONG_NAME}",
        "huge_from_fs_root": "/a" * 400_000,
    }


@pytest.fixture
def root(tmp_path: Path) -> Path:
    repo = tmp_path / "ws" / "repo"
    (repo / "sub").mkdir(parents=True)
    (repo / "inside.txt").write_text("inside\n")
    return repo.resolve()


def entries(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


# -- the workspace, where every path is decided ------------------------------------------


def test_workspace_refuses_over_long_paths_inside_as_refused_files(root: Path) -> None:
    ws = Workspace(root)
    for label, path in inside_payloads(root).items():
        with pytest.raises(FileRefused) as raised:
            ws.resolve(path)
        assert raised.value.reason in ("name_too_long", "path_too_long"), label
    assert ws.resolve("sub/" + "b" * 255).name == "b" * 255  # NAME_MAX itself is fine


def test_workspace_refuses_over_long_paths_outside_as_outside(root: Path) -> None:
    ws = Workspace(root)
    for label, path in outside_payloads(root).items():
        with pytest.raises(PathOutsideWorkspace) as raised:
            ws.resolve(path)
        assert raised.value.reason == "outside", label


def test_a_write_to_an_over_long_path_creates_nothing(root: Path) -> None:
    ws = Workspace(root)
    before = entries(root)
    for path in (MANY_COMPONENTS + "/x.txt", f"sub/{LONG_NAME}/x.txt"):
        with pytest.raises(FileRefused):
            ws.write_text(path, "x")
    assert entries(root) == before


def test_a_symlink_that_makes_the_real_path_too_long_is_refused(root: Path) -> None:
    deep = root / "/".join(["d" * 200] * 19)  # 3819 bytes below the root
    deep.mkdir(parents=True)
    (root / "short").symlink_to(deep)
    ws = Workspace(root)
    assert ws.resolve("short") == deep
    with pytest.raises(FileRefused) as raised:
        ws.resolve("short/" + "/".join(["e" * 200] * 2))
    assert raised.value.reason == "path_too_long"


# -- POST /api/repos ----------------------------------------------------------------------


@pytest.fixture
def client(tmp_path: Path, root: Path) -> Iterator[TestClient]:
    with TestClient(app_for(tmp_path, root, AUTO_REGISTER_REPOS="false")) as test_client:
        yield test_client


def test_registering_an_over_long_path_is_422_or_403(
    client: TestClient, root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="agent_sessions.security"):
        for label, path in inside_payloads(root).items():
            error = assert_error(client.post("/api/repos", json={"path": path}), 422)
            assert error["code"] == "validation_error", label
            assert error["details"]["reason"] in ("name_too_long", "path_too_long"), label
        for label, path in outside_payloads(root).items():
            error = assert_error(client.post("/api/repos", json={"path": path}), 403)
            assert error["code"] == "path_outside_workspace", label
    refused = {getattr(r, "path", None) for r in caplog.records}
    assert LONG_NAME in refused and "/a" * 3000 in refused  # logged as security events
    assert client.get("/readyz").status_code == 200
    assert client.get("/api/repos").json()["repos"] == []


def test_a_directory_that_cannot_be_entered_is_422(client: TestClient, root: Path) -> None:
    """The stat after resolving: an OSError other than "not found" is no 500 either."""
    (root / "loop").symlink_to("loop")
    error = assert_error(client.post("/api/repos", json={"path": "loop/x"}), 422)
    assert error["code"] == "validation_error"


# -- the agent's fs/* requests and a terminal's cwd, through a real demo agent ------------


def test_agent_requests_with_over_long_paths_are_refused(
    tmp_path: Path, root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    payloads = {**inside_payloads(root), **outside_payloads(root)}
    del payloads["huge"], payloads["huge_from_fs_root"]  # over MAX_PROMPT_BYTES as probes
    probes = [(op, path) for path in payloads.values() for op in ("read", "write", "terminal")]
    with TestClient(app_for(tmp_path, root, AUTO_REGISTER_REPOS="false")) as client:
        repo = client.post("/api/repos", json={"path": str(root)}).json()
        session = create_session(client, repo["id"])
        before = entries(root)
        with caplog.at_level(logging.WARNING, logger="agent_sessions.security"):
            run_id = prompt(client, session["id"], "probe-all " + json.dumps(probes))
            wait_for_message(client, session["id"], run_ended(run_id), timeout=60)
        tool = wait_for_message(
            client,
            session["id"],
            lambda m: (
                m["content"].get("toolCallId") == "call_probe"
                and m["content"]["status"] == "completed"
            ),
        )
        results = tool["content"]["result"]["results"]
        assert [(r["op"], r["path"]) for r in results] == probes
        for result in results:
            assert result["ok"] is False, result["op"]
            assert result["code"] == INVALID_PARAMS, (result["op"], result["code"])
        assert entries(root) == before  # no directory chain was created
        refused = [r for r in caplog.records if getattr(r, "event", None) == "path_refused"]
        assert any(
            r.path == MANY_COMPONENTS and r.session_id == session["id"]  # type: ignore[attr-defined]
            for r in refused
        )
        assert client.get(f"/api/sessions/{session['id']}").json()["status"] == "active"
        client.delete(f"/api/sessions/{session['id']}")
    assert not os.path.exists(root / "a")
