"""A prompt's body may hold an image at MAX_IMAGE_BYTES (its base64 is a third larger than
the image, and more than MAX_BODY_BYTES and MAX_WS_MESSAGE_BYTES by default): on a real
uvicorn with the default limits, a 5 MiB image is taken over REST and the WebSocket, a
larger image is refused 413 ``payload_too_large`` (an error frame on the WebSocket); and
(through the TestClient, small limits) a body or frame over the prompt's own limit is still
refused (413, close 1009)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from server.settings import load_settings
from tests.conftest import LiveServer
from tests.helpers import assert_error, run_ended, wait_for_message

MAX_IMAGE = 5 * 1024 * 1024  # the default MAX_IMAGE_BYTES
pytestmark = pytest.mark.slow


def png(size: int) -> str:
    """Base64 of a ``size``-byte PNG (its magic number, then zeros)."""
    data = b"\x89PNG\r\n\x1a\n" + bytes(size - 8)
    return base64.b64encode(data).decode()


def image_prompt(data: str) -> dict[str, Any]:
    return {"text": "look", "content": [{"type": "image", "mimeType": "image/png", "data": data}]}


def until_reply(ws: ClientConnection, ref: str) -> dict[str, Any]:
    while True:
        frame = json.loads(ws.recv(timeout=60))
        if frame["type"] in ("ack", "error") and frame["ref"] == ref:
            return dict(frame)


def wait_run_end(server: LiveServer, session_id: str, run_id: str) -> dict[str, Any]:
    with connect(f"{server.ws_url}/ws/sessions/{session_id}", max_size=None) as ws:
        while True:
            frame = json.loads(ws.recv(timeout=60))
            content = frame.get("message", {}).get("content", {})
            if content.get("type") == "run" and content["runId"] == run_id:
                if content["status"] != "running":
                    return dict(content)


def test_an_image_at_its_limit_passes_rest_and_websocket(
    live_server: Callable[..., LiveServer],
) -> None:
    server = live_server()
    defaults = load_settings(server.env, env_file=None)
    assert defaults.max_image_bytes == MAX_IMAGE
    at_limit = png(MAX_IMAGE)
    body = json.dumps(image_prompt(at_limit)).encode()
    # The case this is about: the body is over both default limits.
    assert len(body) > defaults.max_body_bytes and len(body) > defaults.max_ws_message_bytes
    with httpx.Client(base_url=server.url, timeout=60) as http:
        repo_id = http.get("/api/repos").json()["repos"][0]["id"]
        session_id = http.post("/api/sessions", json={"repoId": repo_id}).json()["id"]
        prompts = f"/api/sessions/{session_id}/prompt"
        headers = {"Content-Type": "application/json"}
        taken = http.post(prompts, content=body, headers=headers)
        assert taken.status_code == 202, taken.text[:500]
        assert wait_run_end(server, session_id, taken.json()["runId"])["status"] == "completed"
        attachment = http.get(f"/api/sessions/{session_id}/messages", params={"role": "user"})
        stored = attachment.json()["messages"][-1]["content"]["attachments"]
        assert [(a["type"], a["size"]) for a in stored] == [("image", MAX_IMAGE)]
        too_big = http.post(prompts, json=image_prompt(png(MAX_IMAGE + 1)))
        error = assert_error(too_big, 413, "payload_too_large")
        assert error["details"] == {"limit": MAX_IMAGE}  # the image's limit, not the body's
    with connect(f"{server.ws_url}/ws/sessions/{session_id}", max_size=None) as ws:
        ws.send(json.dumps({"type": "prompt", "id": "big", **image_prompt(at_limit)}))
        ack = until_reply(ws, "big")
        assert ack["type"] == "ack" and ack["runId"], ack
        frame = {"type": "prompt", "id": "bigger", **image_prompt(png(MAX_IMAGE + 1))}
        ws.send(json.dumps(frame))
        refused = until_reply(ws, "bigger")
        assert refused["type"] == "error" and refused["error"]["code"] == "payload_too_large"
        # A frame that is not a prompt keeps MAX_WS_MESSAGE_BYTES.
        ws.send(json.dumps({"type": "cancel", "pad": "x" * defaults.max_ws_message_bytes}))
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                ws.recv(timeout=60)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    httpx.delete(f"{server.url}/api/sessions/{session_id}", timeout=30)


SMALL = {
    "MAX_BODY_BYTES": 1024,
    "MAX_WS_MESSAGE_BYTES": 1024,
    "MAX_PROMPT_BYTES": 100,
    "MAX_IMAGE_BYTES": 3000,
}


def test_the_prompt_limits(make_client: Callable[..., TestClient]) -> None:
    client = make_client(**SMALL)
    settings = load_settings({k: str(v) for k, v in SMALL.items()}, env_file=None)
    room = 100 + 4000 + 65536  # text, one image in base64, JSON around them
    assert settings.max_prompt_body_bytes == settings.max_prompt_frame_bytes == room
    repo_id = client.get("/api/repos").json()["repos"][0]["id"]
    session_id = client.post("/api/sessions", json={"repoId": repo_id}).json()["id"]
    prompts = f"/api/sessions/{session_id}/prompt"
    headers = {"Content-Type": "application/json"}
    body = json.dumps(image_prompt(png(3000))).encode()
    assert len(body) > 1024
    taken = client.post(prompts, content=body, headers=headers)
    assert taken.status_code == 202, taken.text
    wait_for_message(client, session_id, run_ended(taken.json()["runId"]))
    error = assert_error(client.post(prompts, content=b"x" * (room + 1)), 413)
    assert error["details"] == {"limit": room}
    error = assert_error(client.post(prompts, json=image_prompt(png(3001))), 413)
    assert error["details"] == {"limit": 3000}
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        while ws.receive_json()["type"] != "live":
            pass
        ws.send_json({"type": "prompt", "id": "img", **image_prompt(png(3000))})
        while (reply := ws.receive_json())["type"] == "message":
            pass
        assert reply["type"] == "ack" and reply["ref"] == "img", reply
        ws.send_json({"type": "prompt", "text": "hi", "pad": "x" * room})
        with pytest.raises(WebSocketDisconnect) as closed:
            while True:
                ws.receive_json()
        assert closed.value.code == 1009
