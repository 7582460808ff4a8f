"""API.md, Agent controls → elicitation: the demo agent's ``elicitation/create`` relayed and
stored as an ``elicitation`` message, answered over REST and the WebSocket (form content
checked against the requested schema), the first answer winning, and the request answered
``cancel`` on timeout, on cancel and when the session ends; every refusal of the route."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from tests.helpers import (
    assert_error,
    create_session,
    is_type,
    messages,
    prompt,
    run_ended,
    wait_for_message,
)
from tests.server.test_api_repos import UNKNOWN_ID
from tests.server.test_ws import open_stream, receive_until, reply_to

SCHEMA = {
    "type": "object",
    "properties": {
        "colour": {"type": "string", "enum": ["red", "green"]},
        "count": {"type": "integer", "minimum": 1},
        "sure": {"type": "boolean"},
    },
    "required": ["colour"],
}


def ask(client: TestClient, session_id: str, text: str) -> tuple[str, dict[str, Any], str]:
    """Prompt; wait for the pending elicitation: (run id, its content, its answer URL)."""
    run_id = prompt(client, session_id, text)
    pending = is_type("elicitation", outcome=None)
    asked = wait_for_message(client, session_id, lambda m: pending(m) and m["runId"] == run_id)
    content = asked["content"]
    url = f"/api/sessions/{session_id}/elicitations/{content['requestId']}"
    return run_id, content, url


def finish(client: TestClient, session_id: str, run_id: str) -> dict[str, Any]:
    return dict(wait_for_message(client, session_id, run_ended(run_id))["content"])


def elicitations(client: TestClient, session_id: str) -> list[dict[str, Any]]:
    return [m["content"] for m in messages(client, session_id, type="elicitation")]


def reply(client: TestClient, session_id: str) -> str:
    return "".join(
        m["content"]["text"]
        for m in messages(client, session_id, role="agent", partial="false")
        if m["content"]["type"] == "text"
    )


def test_form_accepted_writes_the_chosen_file(
    client: TestClient, demo_repo_id: str, workspace_root: Path
) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    run_id, asked, url = ask(client, sid, "save notes.txt hello")
    assert asked["mode"] == "form" and asked["url"] is None
    assert asked["message"] == "Save notes.txt? Choose the file name."
    assert set(asked["requestedSchema"]["properties"]) == {"path", "overwrite"}
    assert not (workspace_root / "demo" / "chosen.txt").exists()  # nothing before the answer
    response = client.post(url, json={"action": "accept", "content": {"path": "chosen.txt"}})
    assert response.status_code == 200, response.text
    outcome = {"action": "accept", "content": {"path": "chosen.txt"}}
    assert response.json() == {"requestId": asked["requestId"], "outcome": outcome}
    assert finish(client, sid, run_id)["status"] == "completed"
    assert (workspace_root / "demo" / "chosen.txt").read_text() == "hello"
    assert not (workspace_root / "demo" / "notes.txt").exists()
    stored = elicitations(client, sid)
    assert [e["outcome"] for e in stored] == [None, outcome]
    assert stored[-1]["reason"] == "user" and stored[-1]["requestId"] == asked["requestId"]
    # The first answer won; a later one is refused and changes nothing.
    assert_error(client.post(url, json={"action": "decline"}), 409, "elicitation_already_answered")
    assert len(elicitations(client, sid)) == 2


def test_every_refusal_leaves_the_request_pending(
    client: TestClient, demo_repo_id: str, workspace_root: Path
) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    base = f"/api/sessions/{sid}/elicitations"
    accept = {"action": "accept", "content": {"path": "x.txt"}}
    assert_error(client.post(f"{base}/{UNKNOWN_ID}", json=accept), 404, "elicitation_not_found")
    assert_error(client.post(f"{base}/nope", json=accept), 422, "validation_error")
    assert_error(
        client.post(f"/api/sessions/{UNKNOWN_ID}/elicitations/{UNKNOWN_ID}", json=accept),
        404,
        "session_not_found",
    )
    run_id, asked, url = ask(client, sid, "save notes.txt hello")
    refused: list[tuple[Any, str]] = [
        ({}, "action is required"),
        ({"action": "maybe"}, "action must be one of"),
        ({"action": 3}, "action must be a string"),
        ({"action": "accept", "content": {"path": 5}}, "content.path does not match"),
        ({"action": "accept", "content": {}}, "'path' is a required property"),
        ({"action": "accept", "content": {"path": ""}}, "content.path does not match"),
        ({"action": "accept", "content": {"path": "a", "overwrite": "yes"}}, "content.overwrite"),
        ({"action": "accept", "content": ["path"]}, "content must be an object"),
        ({"action": "accept", "content": {"path": "a", "x": {"deep": 1}}}, "content.x"),
        ({"action": "decline", "content": {"path": "a"}}, "only with action accept"),
    ]
    for body, words in refused:
        error = assert_error(client.post(url, json=body), 422, "validation_error")
        assert words in error["message"], (body, error)
    assert_error(
        client.post(url, content=b"{", headers={"content-type": "application/json"}),
        400,
        "invalid_json",
    )
    other = create_session(client, demo_repo_id)["id"]
    response = client.post(f"/api/sessions/{other}/elicitations/{asked['requestId']}", json=accept)
    assert_error(response, 404, "elicitation_not_found")
    assert [e["outcome"] for e in elicitations(client, sid)] == [None]  # still pending
    assert client.post(url, json={"action": "decline"}).status_code == 200
    assert finish(client, sid, run_id)["status"] == "completed"
    assert "I did not save notes.txt (declined by user)." in reply(client, sid)
    assert not (workspace_root / "demo" / "notes.txt").exists()
    assert elicitations(client, sid)[-1]["outcome"] == {"action": "decline"}


def test_overwrite_only_when_chosen(
    client: TestClient, demo_repo_id: str, workspace_root: Path
) -> None:
    (workspace_root / "demo" / "kept.txt").write_text("old")
    sid = create_session(client, demo_repo_id)["id"]
    run_id, _, url = ask(client, sid, "save kept.txt new")
    assert client.post(url, json={"action": "accept"}).status_code == 422  # path is required
    assert client.post(url, json={"action": "accept", "content": {"path": "kept.txt"}}).is_success
    finish(client, sid, run_id)
    assert (workspace_root / "demo" / "kept.txt").read_text() == "old"
    run_id, _, url = ask(client, sid, "save kept.txt new")
    content = {"path": "kept.txt", "overwrite": True}
    assert client.post(url, json={"action": "accept", "content": content}).is_success
    assert finish(client, sid, run_id)["status"] == "completed"
    assert (workspace_root / "demo" / "kept.txt").read_text() == "new"


def test_cancel_answers_the_elicitation_cancel(
    client: TestClient, demo_repo_id: str, workspace_root: Path
) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    run_id, _, url = ask(client, sid, "save notes.txt hello")
    assert client.post(f"/api/sessions/{sid}/cancel").status_code == 202
    assert finish(client, sid, run_id)["status"] == "cancelled"
    last = elicitations(client, sid)[-1]
    assert last["outcome"] == {"action": "cancel"} and last["reason"] == "turn_cancelled"
    assert_error(client.post(url, json={"action": "decline"}), 409, "elicitation_already_answered")
    assert not (workspace_root / "demo" / "notes.txt").exists()


def test_session_end_answers_the_elicitation_cancel(client: TestClient, demo_repo_id: str) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    _, _, url = ask(client, sid, "save notes.txt hello")
    assert client.delete(f"/api/sessions/{sid}").status_code == 200
    assert elicitations(client, sid)[-1]["outcome"] == {"action": "cancel"}
    assert_error(client.post(url, json={"action": "decline"}), 409, "elicitation_already_answered")


def test_unanswered_elicitation_is_cancelled_after_the_timeout(
    make_client: Callable[..., TestClient], workspace_root: Path
) -> None:
    client = make_client(PERMISSION_TIMEOUT=0.3)
    repo = client.get("/api/repos").json()["repos"][0]["id"]
    sid = create_session(client, repo)["id"]
    run_id = prompt(client, sid, "save notes.txt hello")
    assert finish(client, sid, run_id)["status"] == "cancelled"  # the demo ends it so
    stored = elicitations(client, sid)
    assert stored[0]["outcome"] is None
    assert stored[-1]["outcome"] == {"action": "cancel"} and stored[-1]["reason"] == "timeout"
    assert not (workspace_root / "demo" / "notes.txt").exists()


def test_url_mode_is_relayed_and_takes_no_content(client: TestClient, demo_repo_id: str) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    run_id, asked, url = ask(client, sid, "elicit url https://example.test/login?x=1")
    assert asked["mode"] == "url" and asked["url"] == "https://example.test/login?x=1"
    assert asked["requestedSchema"] is None
    error = assert_error(client.post(url, json={"action": "accept", "content": {}}), 422)
    assert "only with action accept on a form" in error["message"]
    assert client.post(url, json={"action": "accept"}).json()["outcome"] == {"action": "accept"}
    finish(client, sid, run_id)
    assert 'Elicitation answer: {"action": "accept"}' in reply(client, sid)


def test_a_form_of_enum_number_boolean(client: TestClient, demo_repo_id: str) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    run_id, asked, url = ask(client, sid, "elicit form " + json.dumps(SCHEMA))
    assert asked["requestedSchema"] == SCHEMA
    for content, where in (
        ({"colour": "blue"}, "content.colour"),
        ({"colour": "red", "count": 0}, "content.count"),
        ({"colour": "red", "count": 1.5}, "content.count"),
        ({"colour": "red", "sure": "yes"}, "content.sure"),
    ):
        error = assert_error(client.post(url, json={"action": "accept", "content": content}), 422)
        assert error["message"].startswith(where), error
    answer = {"colour": "green", "count": 3, "sure": True}
    assert client.post(url, json={"action": "accept", "content": answer}).is_success
    finish(client, sid, run_id)
    expected = json.dumps({"action": "accept", "content": answer}, sort_keys=True)
    assert f"Elicitation answer: {expected}" in reply(client, sid)


def test_what_the_server_does_not_relay(client: TestClient, demo_repo_id: str) -> None:
    """A form whose schema is no JSON Schema, and a URL that is not http(s), are refused
    to the agent (invalid params) and never shown; a mode the server does not know is
    stored as it came and declined at once."""
    sid = create_session(client, demo_repo_id)["id"]
    for count, text in enumerate(
        (
            'elicit form {"type": 5}',
            "elicit url javascript:alert(1)",
            "elicit url http://[::1",
            "elicit url https:///no-host",
        )
    ):
        run_id = prompt(client, sid, text)
        finish(client, sid, run_id)
        assert elicitations(client, sid) == []
        assert reply(client, sid).count('"action": "error"') == count + 1
    assert reply(client, sid).count("url must be an http or https URL") == 3  # invalid params
    run_id = prompt(client, sid, "elicit _demo_mode")
    finish(client, sid, run_id)
    stored = elicitations(client, sid)
    assert [e["mode"] for e in stored] == ["_demo_mode", "_demo_mode"]
    assert stored[-1]["outcome"] == {"action": "decline"}
    assert stored[-1]["reason"] == "unsupported_mode"
    url = f"/api/sessions/{sid}/elicitations/{stored[0]['requestId']}"
    assert_error(client.post(url, json={"action": "cancel"}), 409, "elicitation_already_answered")


def test_websocket_elicitation_command(
    client: TestClient, demo_repo_id: str, workspace_root: Path
) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    with client.websocket_connect(f"/ws/sessions/{sid}") as ws:
        open_stream(ws)
        reply_to(ws, {"type": "prompt", "text": "save notes.txt hi", "id": "p"}, "p")
        frames = receive_until(
            ws,
            lambda f: f["type"] == "message" and f["message"]["content"]["type"] == "elicitation",
        )
        asked = frames[-1]["message"]["content"]
        command = {"type": "elicitation", "requestId": asked["requestId"], "action": "accept"}
        for bad, code in (
            ({**command, "content": {"path": 1}}, "validation_error"),
            ({**command, "action": "maybe"}, "validation_error"),
            ({**command, "requestId": "nope"}, "validation_error"),
            ({**command, "requestId": UNKNOWN_ID}, "elicitation_not_found"),
        ):
            error, _ = reply_to(ws, {**bad, "id": "bad"}, "bad")
            assert error["type"] == "error" and error["error"]["code"] == code, (bad, error)
        ack, _ = reply_to(ws, {**command, "content": {"path": "ws.txt"}, "id": "a1"}, "a1")
        assert ack == {"type": "ack", "ref": "a1"}
        error, _ = reply_to(ws, {**command, "action": "decline", "id": "a2"}, "a2")
        assert error["type"] == "error"
        assert error["error"]["code"] == "elicitation_already_answered"
    wait_for_message(client, sid, is_type("run", status="completed"))
    assert (workspace_root / "demo" / "ws.txt").read_text() == "hi"
