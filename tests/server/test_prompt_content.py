"""API.md, Prompt content: image and file blocks through the REST and WebSocket prompt,
every refusal (and nothing stored on one), attachments served back. Against the demo
agent, which describes back the images and files it was given."""

from __future__ import annotations

import base64
import hashlib
import logging
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.helpers import assert_error, messages, run_ended, wait_for_message

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(40))
GIF = b"GIF89a" + bytes(30)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def session_of(client: TestClient) -> str:
    repos = client.get("/api/repos").json()["repos"]
    repo = next(r["id"] for r in repos if r["name"] == "demo")
    response = client.post("/api/sessions", json={"repoId": repo})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def send(client: TestClient, sid: str, body: dict[str, Any]) -> Any:
    return client.post(f"/api/sessions/{sid}/prompt", json=body)


def reply(client: TestClient, sid: str, run_id: str) -> tuple[dict[str, Any], str]:
    wait_for_message(client, sid, run_ended(run_id))
    rows = [m for m in messages(client, sid, partial="false") if m["runId"] == run_id]
    user = next(m["content"] for m in rows if m["role"] == "user")
    text = [m["content"]["text"] for m in rows if m["content"]["type"] == "text"][-1]
    return user, text


def test_image_is_sent_stored_and_served(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    sid = session_of(client)
    body = {
        "text": "look",
        "content": [{"type": "image", "mimeType": "image/png", "data": b64(PNG)}],
    }
    response = send(client, sid, body)
    assert response.status_code == 202, response.text
    user, text = reply(client, sid, response.json()["runId"])
    digest = hashlib.sha256(PNG).hexdigest()
    url = f"/api/sessions/{sid}/attachments/{digest}"
    assert user == {
        "type": "text",
        "text": "look",
        "attachments": [
            {
                "type": "image",
                "mimeType": "image/png",
                "size": len(PNG),
                "sha256": digest,
                "url": url,
            }
        ],
    }
    assert "You said: look [image image/png" in text  # the agent got the image
    served = client.get(url)
    assert served.status_code == 200 and served.content == PNG
    assert served.headers["content-type"] == "image/png"
    assert_error(client.get(f"/api/sessions/{sid}/attachments/{'0' * 64}"), 404, "not_found")
    assert_error(client.get(f"/api/sessions/{sid}/attachments/xyz"), 422, "validation_error")


def test_file_blocks_embedded_or_linked(
    make_client: Callable[..., TestClient], workspace_root: Path
) -> None:
    repo = workspace_root / "demo"
    (repo / "notes.txt").write_text("one\ntwo\nthree\n")
    (repo / "big.txt").write_text("x" * 5000)
    client = make_client(MAX_EMBED_BYTES="1000")
    sid = session_of(client)
    content = [
        {"type": "file", "path": "notes.txt", "line": 2, "limit": 1},
        {"type": "file", "path": "big.txt"},
    ]
    response = send(client, sid, {"text": "read", "content": content})
    assert response.status_code == 202, response.text
    user, text = reply(client, sid, response.json()["runId"])
    assert user["attachments"] == [
        {"type": "file", "path": "notes.txt", "line": 2, "limit": 1, "embedded": True},
        {"type": "file", "path": "big.txt", "line": None, "limit": None, "embedded": False},
    ]
    assert f"[embedded {(repo / 'notes.txt').resolve().as_uri()}: 4 chars: 'two\\n']" in text
    assert f"[link {(repo / 'big.txt').resolve().as_uri()}]" in text


def test_refusals_store_nothing(
    make_client: Callable[..., TestClient],
    workspace_root: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    (workspace_root / "secret.txt").write_text("outside")
    client = make_client(MAX_IMAGE_BYTES="100")
    sid = session_of(client)
    before = client.get(f"/api/sessions/{sid}").json()["lastSeq"]
    png = {"type": "image", "mimeType": "image/png", "data": b64(PNG)}
    cases: list[tuple[dict[str, Any], int, str]] = [
        ({"content": [{**png, "mimeType": "image/gif"}]}, 422, "validation_error"),
        ({"content": [{**png, "mimeType": "image/bmp"}]}, 422, "validation_error"),
        ({"content": [{**png, "data": "not base64!"}]}, 422, "validation_error"),
        ({"content": [{**png, "data": b64(b"hello, not an image")}]}, 422, "validation_error"),
        ({"content": [{**png, "data": b64(PNG + bytes(200))}]}, 413, "payload_too_large"),
        ({"content": [{"type": "audio", "data": ""}]}, 422, "validation_error"),
        ({"content": []}, 422, "validation_error"),
        ({"content": "text"}, 422, "validation_error"),
        ({"content": [{"type": "file", "path": "../secret.txt"}]}, 403, "path_outside_workspace"),
        ({"content": [{"type": "file", "path": "/etc/passwd"}]}, 403, "path_outside_workspace"),
        ({"content": [{"type": "file", "path": "missing.txt"}]}, 422, "validation_error"),
        ({"content": [{"type": "file", "path": "README.md", "line": 0}]}, 422, "validation_error"),
        ({"content": [{"type": "text", "text": "  "}]}, 422, "validation_error"),
        # over-long paths (issue 17, item 1): a clear 4xx, inside the root or out of it
        ({"content": [{"type": "file", "path": "a" * 5000}]}, 422, "validation_error"),
        ({"content": [{"type": "file", "path": "a/" * 3000 + "x"}]}, 422, "validation_error"),
        (
            {"content": [{"type": "file", "path": "../" + "a" * 5000}]},
            403,
            "path_outside_workspace",
        ),
    ]
    with caplog.at_level(logging.WARNING, logger="agent_sessions.security"):
        for body, status, code in cases:
            assert_error(send(client, sid, body), status, code)
    assert any("path_refused" == getattr(r, "event", None) for r in caplog.records)
    assert client.get(f"/api/sessions/{sid}").json()["lastSeq"] == before
    ok = send(
        client, sid, {"content": [{"type": "image", "mimeType": "image/gif", "data": b64(GIF)}]}
    )
    assert ok.status_code == 202, ok.text


def test_agent_without_images(make_client: Callable[..., TestClient]) -> None:
    client = make_client({"DEMO_AGENT_MODE": "no-images"})
    sid = session_of(client)
    assert (
        client.get(f"/api/sessions/{sid}/controls").json()["promptCapabilities"]["image"] is False
    )
    body = {"content": [{"type": "image", "mimeType": "image/png", "data": b64(PNG)}]}
    assert_error(send(client, sid, body), 422, "unsupported_content")


def test_websocket_prompt_with_content(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    sid = session_of(client)
    with client.websocket_connect(f"/ws/sessions/{sid}") as ws:
        ws.receive_json()
        ws.send_json(
            {
                "type": "prompt",
                "content": [{"type": "image", "mimeType": "image/png", "data": "x"}],
                "id": 1,
            }
        )
        ws.send_json(
            {
                "type": "prompt",
                "content": [{"type": "image", "mimeType": "image/png", "data": b64(PNG)}],
                "id": 2,
            }
        )
        replies: dict[int, dict[str, Any]] = {}
        while len(replies) < 2:
            frame = ws.receive_json()
            if frame["type"] in ("ack", "error"):
                replies[frame["ref"]] = frame
    assert replies[1]["type"] == "error" and replies[1]["error"]["code"] == "validation_error"
    assert replies[2]["type"] == "ack" and replies[2]["runId"]
    user, text = reply(client, sid, replies[2]["runId"])
    assert user["attachments"][0]["sha256"] == hashlib.sha256(PNG).hexdigest()
    assert "[image image/png" in text


def test_files_for_mentions(make_client: Callable[..., TestClient], workspace_root: Path) -> None:
    repo = workspace_root / "demo"
    (repo / "src" / "deep").mkdir(parents=True)
    (repo / "src" / "deep" / "handler.py").write_text("x")
    (repo / "src" / "hand.txt").write_text("x")
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "debug.log").write_text("x")
    client = make_client()
    sid = session_of(client)
    listed = client.get(f"/api/sessions/{sid}/files").json()["files"]
    assert "src/deep/handler.py" in listed and ".gitignore" in listed  # untracked, not ignored
    assert "debug.log" not in listed and not any(p.startswith(".git/") for p in listed)
    found = client.get(f"/api/sessions/{sid}/files", params={"query": "HAND"}).json()["files"]
    assert found == ["src/hand.txt", "src/deep/handler.py"]  # tighter and shorter first
    found = client.get(f"/api/sessions/{sid}/files", params={"query": "sdh"}).json()["files"]
    assert found == ["src/deep/handler.py"]  # a subsequence across directories
    limited = client.get(f"/api/sessions/{sid}/files", params={"limit": 1}).json()["files"]
    assert len(limited) == 1
    # a change of git's index is seen at once (no waiting for the cache to expire)
    (repo / "added.md").write_text("x")
    subprocess.run(["git", "add", "added.md"], cwd=repo, check=True)
    assert client.get(f"/api/sessions/{sid}/files", params={"query": "added"}).json()["files"] == [
        "added.md"
    ]
    for params in ({"limit": 0}, {"limit": "x"}):
        assert_error(
            client.get(f"/api/sessions/{sid}/files", params=params), 422, "validation_error"
        )
    missing = "00000000-0000-4000-8000-000000000000"
    assert_error(client.get(f"/api/sessions/{missing}/files"), 404, "session_not_found")


def test_files_of_a_plain_directory(
    make_client: Callable[..., TestClient], workspace_root: Path
) -> None:
    plain = workspace_root / "plain"
    (plain / "a" / ".git").mkdir(parents=True)  # not a work tree: a stray .git is skipped
    (plain / "a" / ".git" / "config").write_text("x")
    (plain / "a" / "notes.md").write_text("x")
    outside = workspace_root / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("x")
    (plain / "link").symlink_to(outside, target_is_directory=True)
    client = make_client()
    repo = client.post("/api/repos", json={"path": "plain"})
    assert repo.status_code == 201, repo.text
    created = client.post("/api/sessions", json={"repoId": repo.json()["id"]})
    assert created.status_code == 201, created.text
    listed = client.get(f"/api/sessions/{created.json()['id']}/files").json()["files"]
    assert listed == ["a/notes.md"]  # nothing under .git, the symlinked directory not followed
