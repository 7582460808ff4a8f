"""API.md, Agent controls: modes, config options (and the legacy models block), slash
commands; every rejection; kept for resumption (rewind, load, fork). Against the demo
agent (a real subprocess), through the TestClient."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import httpx
from starlette.testclient import TestClient

from tests.helpers import messages, prompt, run_ended, wait_for_message
from tests.server.test_api_repos import assert_error


def repo_id(client: TestClient) -> str:
    repos = client.get("/api/repos").json()["repos"]
    return str(next(r["id"] for r in repos if r["name"] == "demo"))


def new_session(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/api/sessions", json={"repoId": repo_id(client), **body})
    assert response.status_code == 201, response.text
    return dict(response.json())


def controls(client: TestClient, session_id: str) -> dict[str, Any]:
    response = client.get(f"/api/sessions/{session_id}/controls")
    assert response.status_code == 200, response.text
    return dict(response.json())


def option(ctrl: dict[str, Any], config_id: str) -> dict[str, Any]:
    return next(o for o in ctrl["config"] if o["id"] == config_id)


def answer_of(client: TestClient, session_id: str, text: str) -> str:
    run_id = prompt(client, session_id, text)
    wait_for_message(client, session_id, run_ended(run_id))
    texts = [
        m["content"]["text"]
        for m in messages(client, session_id, partial="false")
        if m["runId"] == run_id and m["role"] == "agent" and m["content"]["type"] == "text"
    ]
    return texts[-1]


def control_messages(client: TestClient, session_id: str) -> list[dict[str, Any]]:
    return [m["content"] for m in messages(client, session_id, type="controls")]


def test_session_carries_controls(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    session = new_session(client)
    ctrl = session["controls"]
    assert ctrl["modes"]["currentModeId"] == "code"
    assert [m["id"] for m in ctrl["modes"]["available"]] == ["code", "ask"]
    model = option(ctrl, "model")
    assert model["type"] == "select" and model["category"] == "model"
    assert model["currentValue"] == "demo-small"
    assert [o["value"] for o in model["options"]] == ["demo-small", "demo-large"]
    assert ctrl["promptCapabilities"] == {"image": True, "audio": False, "embeddedContext": True}
    assert ctrl["mcpServers"] == []
    # the demo's available_commands_update comes before its session/new answer: part of
    # the first controls, not a change (no message)
    assert [c["name"] for c in ctrl["commands"]] == ["help", "files"]
    assert ctrl["commands"][1]["inputHint"] == "glob" and ctrl["commands"][1]["description"]
    assert controls(client, session["id"]) == ctrl
    assert control_messages(client, session["id"]) == []


def test_set_mode_and_config(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    sid = new_session(client)["id"]
    response = client.put(f"/api/sessions/{sid}/mode", json={"modeId": "ask"})
    assert response.status_code == 200, response.text
    assert response.json()["modes"]["currentModeId"] == "ask"
    response = client.put(f"/api/sessions/{sid}/config/model", json={"value": "demo-large"})
    assert response.status_code == 200, response.text
    assert option(response.json(), "model")["currentValue"] == "demo-large"
    ctrl = controls(client, sid)
    assert ctrl["modes"]["currentModeId"] == "ask"
    assert option(ctrl, "model")["currentValue"] == "demo-large"
    # one message per change, by the client (the agent's echo is not a second one)
    changes = [(c["change"], c["by"]) for c in control_messages(client, sid)]
    assert changes == [("mode", "client"), ("config", "client")]
    assert client.get(f"/api/sessions/{sid}").json()["controls"] == ctrl
    # the mode changes how the agent answers; the slash command sees the model
    assert answer_of(client, sid, "hello").startswith("[ask mode] You said: hello")
    assert "model demo-large" in answer_of(client, sid, "/help")


def test_rejections_change_nothing(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    sid = new_session(client)["id"]
    before, seq = controls(client, sid), client.get(f"/api/sessions/{sid}").json()["lastSeq"]
    base = f"/api/sessions/{sid}"
    assert_error(client.put(f"{base}/mode", json={"modeId": "yolo"}), 422, "validation_error")
    assert_error(client.put(f"{base}/mode", json={}), 422, "validation_error")
    assert_error(
        client.put(f"{base}/config/effort", json={"value": "high"}),
        404,
        "config_option_not_found",
    )
    assert_error(client.put(f"{base}/config/model", json={"value": "gpt"}), 422, "validation_error")
    assert_error(client.put(f"{base}/config/model", json={"value": 3}), 422, "validation_error")
    assert_error(client.put(f"{base}/config/model", json={"value": True}), 422, "validation_error")
    assert_error(client.put(f"{base}/config/model", json={}), 422, "validation_error")
    assert controls(client, sid) == before
    assert client.get(base).json()["lastSeq"] == seq
    unknown = "00000000-0000-4000-8000-000000000000"
    assert_error(
        client.put(f"/api/sessions/{unknown}/mode", json={"modeId": "ask"}),
        404,
        "session_not_found",
    )
    assert_error(client.get(f"/api/sessions/{unknown}/controls"), 404, "session_not_found")
    # an ended session keeps its last controls and takes no changes
    assert client.post(f"{base}/complete").status_code == 200
    assert controls(client, sid) == before
    assert_error(client.put(f"{base}/mode", json={"modeId": "ask"}), 409, "session_not_active")
    assert_error(
        client.put(f"{base}/config/model", json={"value": "demo-large"}), 409, "session_not_active"
    )


def test_agent_without_modes(make_client: Callable[..., TestClient]) -> None:
    client = make_client({"DEMO_AGENT_MODE": "no-controls"})
    session = new_session(client)
    assert session["controls"]["modes"] is None and session["controls"]["config"] == []
    sid = session["id"]
    assert_error(
        client.put(f"/api/sessions/{sid}/mode", json={"modeId": "ask"}), 409, "not_supported"
    )
    assert_error(
        client.put(f"/api/sessions/{sid}/config/model", json={"value": "demo-large"}),
        404,
        "config_option_not_found",
    )


def test_legacy_models_block(make_client: Callable[..., TestClient]) -> None:
    client = make_client({"DEMO_AGENT_MODE": "legacy-models"})
    session = new_session(client)
    model = option(session["controls"], "model")
    assert model["currentValue"] == "demo-small" and model["category"] == "model"
    sid = session["id"]
    response = client.put(f"/api/sessions/{sid}/config/model", json={"value": "demo-large"})
    assert response.status_code == 200, response.text
    assert option(response.json(), "model")["currentValue"] == "demo-large"
    assert "model demo-large" in answer_of(client, sid, "/help")  # session/set_model took


def test_create_with_choices(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    session = new_session(client, modeId="ask", config={"model": "demo-large"})
    ctrl = controls(client, session["id"])
    assert ctrl["modes"]["currentModeId"] == "ask"
    assert option(ctrl, "model")["currentValue"] == "demo-large"
    total = client.get("/api/sessions").json()["total"]
    for body in ({"modeId": "yolo"}, {"config": {"model": "gpt"}}, {"config": {"effort": "x"}}):
        response = client.post("/api/sessions", json={"repoId": repo_id(client), **body})
        assert response.status_code in (404, 422), response.text
        assert client.get("/api/sessions").json()["total"] == total  # not created
    assert_error(
        client.post("/api/sessions", json={"repoId": repo_id(client), "config": ["x"]}),
        422,
        "validation_error",
    )


def test_kept_across_rewind_and_fork(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    sid = new_session(client)["id"]
    assert client.put(f"/api/sessions/{sid}/mode", json={"modeId": "ask"}).status_code == 200
    set_model = client.put(f"/api/sessions/{sid}/config/model", json={"value": "demo-large"})
    assert set_model.status_code == 200
    assert answer_of(client, sid, "one").startswith("[ask mode]")
    # rewind stops the agent; the next prompt starts a fresh one (at its defaults)
    response = client.post(f"/api/sessions/{sid}/rewind", json={"toSeq": 1})
    assert response.status_code == 200, response.text
    assert answer_of(client, sid, "two").startswith("[ask mode] You said: two")
    assert "model demo-large" in answer_of(client, sid, "/help")
    fork = client.post(f"/api/sessions/{sid}/fork", json={})
    assert fork.status_code == 201, fork.text
    child = fork.json()["id"]
    assert fork.json()["controls"]["modes"]["currentModeId"] == "ask"
    assert "model demo-large" in answer_of(client, child, "/help")


def test_kept_across_load(make_client: Callable[..., TestClient], tmp_path: Any) -> None:
    state = tmp_path / "agent-state"
    state.mkdir()
    client = make_client({"DEMO_AGENT_LOAD": "1", "DEMO_AGENT_STATE_DIR": str(state)})
    sid = new_session(client)["id"]
    assert client.put(f"/api/sessions/{sid}/mode", json={"modeId": "ask"}).status_code == 200
    assert answer_of(client, sid, "one").startswith("[ask mode]")
    sessions = client.app.state.agent_sessions.sessions  # type: ignore[attr-defined]
    live = sessions.registry[sid]
    client.portal.call(live.stop, "cancelled")  # type: ignore[union-attr]
    assert sid not in sessions.registry
    # the agent comes back through session/load, which answers its default mode
    assert answer_of(client, sid, "two").startswith("[ask mode] You said: two")
    assert controls(client, sid)["modes"]["currentModeId"] == "ask"


def test_websocket_commands(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    sid = new_session(client)["id"]
    with client.websocket_connect(f"/ws/sessions/{sid}") as ws:
        ws.receive_json()  # hello
        ws.send_json({"type": "set_mode", "modeId": "ask", "id": 1})
        ws.send_json({"type": "set_config", "configId": "model", "value": "x", "id": 2})
        ws.send_json({"type": "set_config", "configId": "nope", "value": "x", "id": 3})
        ws.send_json({"type": "set_config", "configId": "model", "value": "demo-large", "id": 4})
        replies: dict[int, dict[str, Any]] = {}
        while len(replies) < 4:
            frame = ws.receive_json()
            if frame["type"] in ("ack", "error"):
                replies[frame["ref"]] = frame
    assert replies[1]["type"] == "ack"
    assert replies[2]["type"] == "error" and replies[2]["error"]["code"] == "validation_error"
    assert replies[3]["error"]["code"] == "config_option_not_found"
    assert replies[4]["type"] == "ack"
    ctrl = controls(client, sid)
    assert ctrl["modes"]["currentModeId"] == "ask"
    assert option(ctrl, "model")["currentValue"] == "demo-large"


def test_kept_across_a_server_restart(live_server: Callable[..., Any]) -> None:
    """A real uvicorn, stopped and started again on the same database: the session's next
    prompt starts a fresh agent (at its defaults) and the kept mode and model come back."""
    first = live_server()
    with httpx.Client(base_url=first.url, timeout=30) as http:
        repos = http.get("/api/repos").json()["repos"]
        repo = next(r["id"] for r in repos if r["name"] == "demo")
        body = {"repoId": repo, "modeId": "ask", "config": {"model": "demo-large"}}
        created = http.post("/api/sessions", json=body)
        assert created.status_code == 201, created.text
        sid = created.json()["id"]
    assert first.stop() == 0
    second = live_server()
    with httpx.Client(base_url=second.url, timeout=30) as http:
        client = cast(TestClient, http)  # the helpers only use .get and .post
        assert controls(client, sid)["modes"]["currentModeId"] == "ask"
        assert answer_of(client, sid, "/help").startswith("Demo agent, mode ask, model demo-large")
