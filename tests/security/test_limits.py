"""API.md, Errors 413 and Configuration limits: request bodies over MAX_BODY_BYTES (with
or without a declared length, on every route, also those that never read a body),
prompts over MAX_PROMPT_BYTES, WebSocket client frames over MAX_WS_MESSAGE_BYTES (1009),
both through the TestClient and on a real uvicorn."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import httpx
import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.conftest import LiveServer, make_git_repo
from tests.helpers import assert_error, create_session
from tests.security.support import WS, Operation, app_for, operations, route_app

BODY_LIMIT = 1024
PROMPT_LIMIT = 100
FRAME_LIMIT = 2048
LIMITS = {
    "MAX_BODY_BYTES": BODY_LIMIT,
    "MAX_PROMPT_BYTES": PROMPT_LIMIT,
    "MAX_WS_MESSAGE_BYTES": FRAME_LIMIT,
}
OPERATIONS = [op for op in operations(route_app()) if op.method not in (WS, "HEAD")]
# A prompt's body may hold an image (tests/security/test_prompt_body.py): its own limit.
BODY_OPERATIONS = [op for op in OPERATIONS if not op.path().endswith("/prompt")]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    tmp = tmp_path_factory.mktemp("limits")
    root = tmp / "workspace"
    make_git_repo(root / "demo")
    with TestClient(app_for(tmp, root, **LIMITS)) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def session_id(client: TestClient) -> Iterator[str]:
    repo_id = client.get("/api/repos").json()["repos"][0]["id"]
    session = create_session(client, repo_id)
    yield session["id"]
    client.delete(f"/api/sessions/{session['id']}")


def chunks(total: int, size: int = 100) -> Iterator[bytes]:
    """A body with no declared length (sent chunked)."""
    sent = 0
    while sent < total:
        piece = min(size, total - sent)
        sent += piece
        yield b"x" * piece


# -- request bodies ---------------------------------------------------------------------


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
@pytest.mark.parametrize("op", BODY_OPERATIONS, ids=str)
def test_every_route_refuses_a_body_over_the_limit(
    client: TestClient, op: Operation, declared: bool
) -> None:
    body: bytes | Iterator[bytes] = (
        b"{" + b" " * BODY_LIMIT + b"}" if declared else chunks(BODY_LIMIT + 1)
    )
    headers = {"Content-Type": "application/json"}
    response = client.request(op.method, op.path(), content=body, headers=headers)
    error = assert_error(response, 413, "payload_too_large")
    assert error["details"] == {"limit": BODY_LIMIT}


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_a_body_at_the_limit_passes(client: TestClient, session_id: str, declared: bool) -> None:
    text = "x" * (BODY_LIMIT - len('{"optionId":""}'))
    body = json.dumps({"optionId": text}, separators=(",", ":")).encode()
    assert len(body) == BODY_LIMIT
    content = body if declared else iter([body[:500], body[500:]])
    response = client.post(
        f"/api/sessions/{session_id}/permissions/00000000-0000-4000-8000-000000000000",
        content=content,
        headers={"Content-Type": "application/json"},
    )
    assert_error(response, 404, "permission_not_found")  # read and parsed: the id is unknown


def test_a_route_that_reads_no_body_still_gets_413(client: TestClient, session_id: str) -> None:
    response = client.post(f"/api/sessions/{session_id}/cancel", content=chunks(BODY_LIMIT * 4))
    assert_error(response, 413, "payload_too_large")
    response = client.post(f"/api/sessions/{session_id}/cancel", content=b"x" * 10)
    assert response.status_code == 202  # under the limit: the route runs


# -- prompts ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("€" * 34, 413),  # 34 characters, 102 bytes: the limit is in bytes
        ("x" * (PROMPT_LIMIT + 1), 413),
        ("x" * PROMPT_LIMIT, 202),
    ],
)
def test_prompt_limit(client: TestClient, session_id: str, text: str, status: int) -> None:
    from tests.helpers import run_ended, wait_for_message

    response = client.post(f"/api/sessions/{session_id}/prompt", json={"text": text})
    if status == 413:
        assert_error(response, 413, "payload_too_large")
    else:
        assert response.status_code == 202, response.text
        wait_for_message(client, session_id, run_ended(response.json()["runId"]))


def test_prompt_limit_over_the_websocket(client: TestClient, session_id: str) -> None:
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        while ws.receive_json()["type"] != "live":
            pass
        ws.send_json({"type": "prompt", "text": "€" * 34, "id": "big"})
        while (reply := ws.receive_json())["type"] == "message":
            pass
        assert reply == {
            "type": "error",
            "ref": "big",
            "error": {"code": "payload_too_large", "message": reply["error"]["message"]},
        }


# -- WebSocket frames -------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["text", "bytes"])
def test_a_frame_over_the_limit_closes_1009(client: TestClient, session_id: str, kind: str) -> None:
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        while ws.receive_json()["type"] != "live":
            pass
        ws.send_json({"type": "cancel", "id": "small"})  # a frame within the limit is answered
        while (reply := ws.receive_json())["type"] == "message":
            pass
        assert reply == {"type": "ack", "ref": "small"}
        frame = json.dumps({"type": "cancel", "pad": "x" * FRAME_LIMIT})
        if kind == "text":
            ws.send_text(frame)
        else:
            ws.send_bytes(frame.encode())
        with pytest.raises(WebSocketDisconnect) as closed:
            while True:
                assert ws.receive_json()["type"] == "message"
        assert closed.value.code == 1009


# -- on a real uvicorn ------------------------------------------------------------------


def test_limits_on_a_live_server(live_server: Callable[..., LiveServer]) -> None:
    server = live_server(**LIMITS)
    with httpx.Client(base_url=server.url, timeout=20) as http:
        declared = http.post(
            "/api/repos",
            content=b"x" * (BODY_LIMIT + 1),
            headers={"Content-Type": "application/json"},
        )
        assert_error(declared, 413, "payload_too_large")
        chunked = http.post(
            "/api/repos",
            content=chunks(BODY_LIMIT + 1),
            headers={"Content-Type": "application/json"},
        )
        assert "content-length" not in chunked.request.headers
        assert_error(chunked, 413, "payload_too_large")
        assert http.get("/healthz").status_code == 200  # and the server is fine
        repo_id = http.get("/api/repos").json()["repos"][0]["id"]
        created = http.post("/api/sessions", json={"repoId": repo_id})
        assert created.status_code == 201, created.text
        session_id = created.json()["id"]
        big_prompt = http.post(
            f"/api/sessions/{session_id}/prompt", json={"text": "x" * (PROMPT_LIMIT + 1)}
        )
        assert_error(big_prompt, 413, "payload_too_large")
    with connect(f"{server.ws_url}/ws/sessions/{session_id}", open_timeout=10, max_size=None) as ws:
        while json.loads(ws.recv(timeout=10))["type"] != "live":
            pass
        ws.send(json.dumps({"type": "cancel", "id": "ok", "pad": "x" * (FRAME_LIMIT - 100)}))
        while (reply := json.loads(ws.recv(timeout=10)))["type"] == "message":
            pass
        assert reply == {"type": "ack", "ref": "ok"}
        ws.send(json.dumps({"type": "cancel", "pad": "x" * FRAME_LIMIT}))
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                assert json.loads(ws.recv(timeout=10))["type"] == "message"
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    httpx.delete(f"{server.url}/api/sessions/{session_id}", timeout=20)
