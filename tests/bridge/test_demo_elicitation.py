"""The demo agent's questions (ACP elicitation/create): ``save`` asks a form before it
writes when the client advertised forms and falls back to the permission request when it
did not; ``elicit`` asks only modes the client advertised. Their requests, and the
capability the server's client advertises, match the official ACP schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest

from agent_bridge import AcpClient, Workspace
from tests.bridge.test_demo_agent import README, SCHEMA, reply_text, spawn, start, tool_statuses


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "README.md").write_text(README)
    return path


def check(name: str, value: Any) -> list[str]:
    if SCHEMA is None:
        pytest.skip("no ACP schema here")
    validator = jsonschema.Draft202012Validator(
        {"$ref": f"#/$defs/{name}", "$defs": SCHEMA["$defs"]}
    )
    return [e.message for e in validator.iter_errors(value)]


@pytest.mark.anyio
async def test_save_without_forms_asks_permission(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        answer, updates = await agent.prompt(session, "save new.txt data")
        assert answer["result"]["stopReason"] == "end_turn"
        assert agent.requests("elicitation/create") == []
        (permission,) = agent.requests("session/request_permission")
        assert permission["params"]["toolCall"]["toolCallId"] == "call_2"
        assert (workspace / "new.txt").read_text() == "data"


@pytest.mark.anyio
async def test_save_asks_a_form_and_writes_the_chosen_file(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent, elicitation=True)
        agent.elicitation_answer = {"action": "accept", "content": {"path": "other.txt"}}
        answer, updates = await agent.prompt(session, "save new.txt data")
        assert answer["result"]["stopReason"] == "end_turn"
        (asked,) = agent.requests("elicitation/create")
        params = asked["params"]
        assert params["sessionId"] == session and params["mode"] == "form"
        assert params["requestedSchema"]["required"] == ["path"]
        assert params["requestedSchema"]["properties"]["path"]["default"] == "new.txt"
        assert check("CreateElicitationRequest", params) == []
        assert agent.requests("session/request_permission") == []  # the form was the question
        assert (workspace / "other.txt").read_text() == "data"
        assert not (workspace / "new.txt").exists()
        assert tool_statuses(updates, "call_2") == ["pending", "in_progress", "completed"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("answer", "stop", "said"),
    [
        ({"action": "decline"}, "end_turn", "I did not save README.md (declined by user)."),
        ({"action": "cancel"}, "cancelled", None),
        (
            {"action": "accept", "content": {"path": "README.md"}},
            "end_turn",
            "I did not save README.md (it exists and replacing it was not chosen).",
        ),
    ],
)
async def test_save_writes_nothing_unless_chosen(
    workspace: Path, answer: dict[str, Any], stop: str, said: str | None
) -> None:
    before = (workspace / "README.md").read_text()
    async with spawn(workspace) as agent:
        session = await start(workspace, agent, elicitation=True)
        agent.elicitation_answer = answer
        result, updates = await agent.prompt(session, "save README.md replaced")
        assert result["result"]["stopReason"] == stop
        if said is not None:
            assert said in reply_text(updates)
        assert agent.requests("fs/write_text_file") == []
    assert (workspace / "README.md").read_text() == before


@pytest.mark.anyio
async def test_elicit_asks_only_advertised_modes(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        _, updates = await agent.prompt(session, "elicit url https://example.test/")
        assert "The client takes no URL elicitations." in reply_text(updates)
        assert agent.requests("elicitation/create") == []
    async with spawn(workspace) as agent:
        session = await start(workspace, agent, elicitation=True)
        agent.elicitation_answer = {"action": "accept"}
        _, updates = await agent.prompt(session, "elicit url https://example.test/")
        (asked,) = agent.requests("elicitation/create")
        assert asked["params"]["url"] == "https://example.test/"
        assert check("CreateElicitationRequest", asked["params"]) == []
        assert 'Elicitation answer: {"action": "accept"}' in reply_text(updates)


def test_the_server_advertises_forms_and_urls_as_acp_spells_them(tmp_path: Path) -> None:
    class Callbacks:
        pass

    for elicitation, expected in ((True, {"elicitation": {"form": {}, "url": {}}}), (False, {})):
        callbacks: Any = Callbacks()
        client = AcpClient(callbacks, Workspace(tmp_path), elicitation=elicitation)
        caps = {"fs": {"readTextFile": True}, **client._elicitation_capability()}
        assert {k: v for k, v in caps.items() if k == "elicitation"} == expected
        assert check("ClientCapabilities", caps) == []
