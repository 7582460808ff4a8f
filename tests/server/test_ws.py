"""API.md, WebSocket stream: hello -> replay after the cursor -> live, client commands,
refusals and close codes, through the TestClient."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient, WebSocketTestSession
from starlette.websockets import WebSocketDisconnect

from server.app import create_app
from server.settings import Settings
from tests.helpers import create_session, messages, prompt, run_ended, wait_for_message
from tests.server.test_api_repos import UNKNOWN_ID

Frame = dict[str, Any]


def open_stream(ws: WebSocketTestSession) -> tuple[Frame, list[Frame]]:
    """Read hello and the replay up to ``live``; returns (hello, replayed messages)."""
    hello = ws.receive_json()
    assert hello["type"] == "hello", hello
    replay = []
    while (frame := ws.receive_json())["type"] != "live":
        assert frame["type"] == "message", frame
        replay.append(frame["message"])
    return hello, replay


def receive_until(ws: WebSocketTestSession, done: Callable[[Frame], bool]) -> list[Frame]:
    """Every frame up to and including the first one ``done`` accepts."""
    frames = []
    while True:
        frame = ws.receive_json()
        frames.append(frame)
        if done(frame):
            return frames


def is_run_end(run_id: str | None = None) -> Callable[[Frame], bool]:
    def match(frame: Frame) -> bool:
        if frame["type"] != "message":
            return False
        content = frame["message"]["content"]
        return (
            content["type"] == "run"
            and content["status"] != "running"
            and (run_id is None or content["runId"] == run_id)
        )

    return match


def is_reply(ref: Any) -> Callable[[Frame], bool]:
    return lambda frame: frame["type"] in ("ack", "error") and frame["ref"] == ref


def reply_to(ws: WebSocketTestSession, command: Frame | str, ref: Any) -> tuple[Frame, list[Frame]]:
    """Send a command; returns its answer and the message frames that came before it."""
    if isinstance(command, str):
        ws.send_text(command)
    else:
        ws.send_json(command)
    frames = receive_until(ws, is_reply(ref))
    return frames[-1], [f for f in frames[:-1] if f["type"] == "message"]


def frames_to_run_end(ws: WebSocketTestSession, run_id: str, seen: list[Frame]) -> list[Frame]:
    """``seen`` and what follows, up to the run's end: a turn may end while a command's
    reply is on its way, so its end may be among the frames received already."""
    ended = is_run_end(run_id)
    for index, frame in enumerate(seen):
        if ended(frame):
            return seen[: index + 1]
    return seen + receive_until(ws, ended)


def seqs(frames: list[Frame]) -> list[int]:
    return [f["message"]["seq"] for f in frames if f["type"] == "message"]


def close_code(ws: WebSocketTestSession) -> int:
    """Read until the server closes; its close code."""
    with pytest.raises(WebSocketDisconnect) as closed:
        while True:
            ws.receive_json()
    return int(closed.value.code)


# -- hello, replay, live ---------------------------------------------------------------


def test_hello_replay_then_live(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    first_run = prompt(client, session["id"], "hello")
    wait_for_message(client, session["id"], run_ended(first_run))
    stored = messages(client, session["id"])
    last = stored[-1]["seq"]

    with client.websocket_connect(f"/ws/sessions/{session['id']}") as ws:
        hello, replay = open_stream(ws)
        assert hello["session"]["id"] == session["id"]
        assert hello["session"]["status"] == "active"
        assert hello["lastSeq"] == last == hello["session"]["lastSeq"]
        assert replay == stored  # after=0: the whole history, partial chunks included

    cursor = stored[4]["seq"]
    with client.websocket_connect(f"/ws/sessions/{session['id']}?after={cursor}") as ws:
        hello, replay = open_stream(ws)
        assert hello["lastSeq"] == last
        assert replay == stored[5:]
        # Live: a new turn arrives as it is stored, continuing the sequence.
        run_id = prompt(client, session["id"], "again")
        live = receive_until(ws, is_run_end(run_id))
        assert all(f["type"] == "message" for f in live)
        assert seqs(live) == list(range(last + 1, last + 1 + len(live)))
        assert [f["message"] for f in live] == messages(client, session["id"], after=last)

    with client.websocket_connect(f"/ws/sessions/{session['id']}?after=10000") as ws:
        hello, replay = open_stream(ws)
        assert replay == []


def test_two_viewers_see_the_same_sequence(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    url = f"/ws/sessions/{session['id']}"
    with client.websocket_connect(url) as one, client.websocket_connect(url) as two:
        open_stream(one)
        open_stream(two)
        run_id = prompt(client, session["id"], "tools 3")
        seen_one = receive_until(one, is_run_end(run_id))
        seen_two = receive_until(two, is_run_end(run_id))
    assert seen_one == seen_two
    assert seqs(seen_one) == list(range(2, 2 + len(seen_one)))
    assert [f["message"] for f in seen_one] == messages(client, session["id"], after=1)


# -- commands ----------------------------------------------------------------------------


def test_prompt_and_cancel_commands(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    with client.websocket_connect(f"/ws/sessions/{session['id']}") as ws:
        open_stream(ws)
        ack, _ = reply_to(ws, {"type": "prompt", "text": "slow 30", "id": "p1"}, "p1")
        assert ack["type"] == "ack" and ack["ref"] == "p1"
        run_id = ack["runId"]
        # The user message was stored before the ack.
        assert messages(client, session["id"], role="user")[-1]["runId"] == run_id

        error, _ = reply_to(ws, {"type": "prompt", "text": "again", "id": "p2"}, "p2")
        assert error["type"] == "error"
        assert error["error"]["code"] == "turn_in_progress" and error["error"]["message"]

        error, _ = reply_to(ws, {"type": "prompt", "text": "", "id": 7}, 7)
        assert (error["type"], error["error"]["code"]) == ("error", "validation_error")

        receive_until(
            ws,
            lambda f: (
                f["type"] == "message"
                and f["message"]["role"] == "agent"
                and f["message"]["content"]["type"] == "text"
            ),
        )  # the agent's turn has begun
        ack, before = reply_to(ws, {"type": "cancel", "id": "c1"}, "c1")
        assert ack == {"type": "ack", "ref": "c1"}
        end = frames_to_run_end(ws, run_id, before)[-1]["message"]["content"]
        assert end["status"] == "cancelled"

        # No id: the answer's ref is null.
        ack, before = reply_to(ws, {"type": "prompt", "text": "hi"}, None)
        assert ack["type"] == "ack" and ack["runId"] != run_id
        assert (
            frames_to_run_end(ws, ack["runId"], before)[-1]["message"]["content"]["status"]
            == "completed"
        )


@pytest.mark.parametrize(
    ("command", "ref", "code"),
    [
        ("{not json", None, "invalid_json"),
        ("[1, 2]", None, "validation_error"),
        ({"type": "dance", "id": "d1"}, "d1", "validation_error"),
        ({"id": "n1"}, "n1", "validation_error"),
        (
            {"type": "permission", "requestId": UNKNOWN_ID, "optionId": "allow", "id": "q"},
            "q",
            "permission_not_found",
        ),
        ({"type": "permission", "id": "q2"}, "q2", "validation_error"),
    ],
)
def test_bad_commands_get_an_error_and_the_stream_goes_on(
    client: TestClient, demo_repo_id: str, command: Frame | str, ref: Any, code: str
) -> None:
    session = create_session(client, demo_repo_id)
    with client.websocket_connect(f"/ws/sessions/{session['id']}") as ws:
        open_stream(ws)
        error, _ = reply_to(ws, command, ref)
        assert error["type"] == "error"
        assert set(error["error"]) == {"code", "message"}
        assert error["error"]["code"] == code
        ack, _ = reply_to(ws, {"type": "cancel", "id": "still-open"}, "still-open")
        assert ack["type"] == "ack"


def test_permission_command(client: TestClient, demo_repo_id: str, workspace_root: Path) -> None:
    session = create_session(client, demo_repo_id)
    with client.websocket_connect(f"/ws/sessions/{session['id']}") as ws:
        open_stream(ws)
        started, _ = reply_to(ws, {"type": "prompt", "text": "write notes.txt hi", "id": "p"}, "p")
        frames = receive_until(
            ws, lambda f: f["type"] == "message" and f["message"]["content"]["type"] == "permission"
        )
        asked = frames[-1]["message"]["content"]
        assert asked["outcome"] is None
        command = {"type": "permission", "requestId": asked["requestId"], "optionId": "allow"}
        ack, before = reply_to(ws, {**command, "id": "a1"}, "a1")
        assert ack == {"type": "ack", "ref": "a1"}
        error, more = reply_to(ws, {**command, "optionId": "reject", "id": "a2"}, "a2")
        assert error["type"] == "error" and error["error"]["code"] == "permission_already_decided"
        seen = frames_to_run_end(ws, started["runId"], before + more)
        end = seen[-1]
        decided = [
            f["message"]["content"]
            for f in seen
            if f["type"] == "message" and f["message"]["content"]["type"] == "permission"
        ]
        assert decided[0]["outcome"] == {"outcome": "selected", "optionId": "allow"}
        assert end["message"]["content"]["status"] == "completed"
    assert (workspace_root / "demo" / "notes.txt").read_text() == "hi"


def test_commands_on_an_ended_session(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    with client.websocket_connect(f"/ws/sessions/{session['id']}") as ws:
        open_stream(ws)
        assert client.post(f"/api/sessions/{session['id']}/complete").status_code == 200
        error, _ = reply_to(ws, {"type": "prompt", "text": "hi", "id": "x"}, "x")
        assert error["error"]["code"] == "session_not_active"
        error, _ = reply_to(ws, {"type": "cancel", "id": "y"}, "y")
        assert error["error"]["code"] == "session_not_active"


# -- refusals and close codes ------------------------------------------------------------


@pytest.mark.parametrize("session_id", [UNKNOWN_ID, "not-a-uuid"])
def test_unknown_session_closes_4404(client: TestClient, session_id: str) -> None:
    with client.websocket_connect(f"/ws/sessions/{session_id}") as ws:
        assert close_code(ws) == 4404


def test_frame_over_the_limit_closes_1009(make_settings: Callable[..., Settings]) -> None:
    """A frame over MAX_WS_MESSAGE_BYTES, or a prompt frame over its own larger limit
    (room for an image: tests/security/test_prompt_body.py), closes 1009."""
    limits = {"MAX_WS_MESSAGE_BYTES": 256, "MAX_PROMPT_BYTES": 100, "MAX_IMAGE_BYTES": 100}
    settings = make_settings(**limits)
    with TestClient(create_app(settings)) as c:
        repo_id = c.get("/api/repos").json()["repos"][0]["id"]
        session = create_session(c, repo_id)
        for big in (
            {"type": "cancel", "id": "y" * 300},
            {"type": "prompt", "text": "y" * settings.max_prompt_frame_bytes, "id": "big"},
        ):
            with c.websocket_connect(f"/ws/sessions/{session['id']}") as ws:
                open_stream(ws)
                ack, _ = reply_to(ws, {"type": "cancel", "id": "x" * 200}, "x" * 200)  # fine
                assert ack["type"] == "ack"
                ws.send_json(big)
                assert close_code(ws) == 1009
        assert messages(c, session["id"], role="user") == []


def test_token_is_required_when_set(make_settings: Callable[..., Settings]) -> None:
    with TestClient(create_app(make_settings(API_TOKEN="s3cret"))) as c:
        headers = {"Authorization": "Bearer s3cret"}
        repo_id = c.get("/api/repos", headers=headers).json()["repos"][0]["id"]
        session = c.post("/api/sessions", json={"repoId": repo_id}, headers=headers).json()
        url = f"/ws/sessions/{session['id']}"
        with c.websocket_connect(url) as ws:
            assert close_code(ws) == 4401
        with c.websocket_connect(f"{url}?token=wrong") as ws:
            assert close_code(ws) == 4401
        with c.websocket_connect(f"{url}?token=s3cret") as ws:
            assert open_stream(ws)[0]["session"]["id"] == session["id"]
        with c.websocket_connect(url, headers=headers) as ws:
            assert open_stream(ws)[0]["session"]["id"] == session["id"]


def test_forbidden_origin_closes_4403(make_settings: Callable[..., Settings]) -> None:
    with TestClient(create_app(make_settings(ALLOWED_ORIGINS="https://ui.example"))) as c:
        repo_id = c.get("/api/repos").json()["repos"][0]["id"]
        session = create_session(c, repo_id)
        url = f"/ws/sessions/{session['id']}"
        with c.websocket_connect(url, headers={"origin": "https://evil.example"}) as ws:
            assert close_code(ws) == 4403
        with c.websocket_connect(url, headers={"origin": "https://ui.example"}) as ws:
            assert open_stream(ws)[0]["type"] == "hello"
        with c.websocket_connect(url, headers={"origin": "http://localhost"}) as ws:  # our own
            assert open_stream(ws)[0]["type"] == "hello"
