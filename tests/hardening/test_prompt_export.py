"""Export keeps the prompt: the user message's raw frame is the ACP prompt as the agent
got it (the image's data, the embedded file's text, the link of a file too large to
embed); import takes it back, and the imported session serves the image again."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from starlette.testclient import TestClient

from tests.helpers import create_session, run_ended, wait_for_message

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(40))


def exported(client: TestClient, session_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/api/sessions/{session_id}/export")
    assert response.status_code == 200, response.text
    return [orjson.loads(line) for line in response.content.splitlines() if line.strip()]


def user_message(lines: list[dict[str, Any]]) -> dict[str, Any]:
    (user,) = [m for m in lines[1:] if m["role"] == "user"]
    return user


def test_image_and_file_mention_round_trip(
    make_client: Callable[..., TestClient], workspace_root: Path
) -> None:
    repo = workspace_root / "demo"
    (repo / "notes.txt").write_text("one\ntwo\n")
    (repo / "big.txt").write_text("x" * 5000)
    client = make_client(MAX_EMBED_BYTES="1000")
    repo_id = client.get("/api/repos").json()["repos"][0]["id"]
    session_id = create_session(client, repo_id)["id"]
    data = base64.b64encode(PNG).decode()
    content = [
        {"type": "text", "text": "look"},
        {"type": "image", "mimeType": "image/png", "data": data},
        {"type": "file", "path": "notes.txt"},
        {"type": "file", "path": "big.txt"},
    ]
    response = client.post(f"/api/sessions/{session_id}/prompt", json={"content": content})
    assert response.status_code == 202, response.text
    wait_for_message(client, session_id, run_ended(response.json()["runId"]))

    lines = exported(client, session_id)
    raw = user_message(lines)["raw"]
    assert raw is not None, "the prompt's frame is exported"
    assert raw["method"] == "session/prompt"
    blocks = raw["params"]["prompt"]
    assert blocks[0] == {"type": "text", "text": "look"}
    assert blocks[1] == {"type": "image", "mimeType": "image/png", "data": data}
    assert blocks[2]["type"] == "resource"
    assert blocks[2]["resource"]["text"] == "one\ntwo\n"
    assert blocks[3]["type"] == "resource_link"
    assert blocks[3]["uri"] == (repo / "big.txt").resolve().as_uri()

    body = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    imported = client.post(
        f"/api/sessions/import?repoId={repo_id}",
        content=body,
        headers={"content-type": "application/x-ndjson"},
    )
    assert imported.status_code == 201, imported.text
    new_id = imported.json()["id"]
    again = user_message(exported(client, new_id))
    assert again["raw"] == raw
    (image,) = [a for a in again["content"]["attachments"] if a["type"] == "image"]
    digest = hashlib.sha256(PNG).hexdigest()
    assert image["url"] == f"/api/sessions/{new_id}/attachments/{digest}"
    served = client.get(image["url"])
    assert served.status_code == 200 and served.content == PNG
