"""The real coding agents (claude-agent-acp, codex-acp, gemini --acp) take the server's
``client-tools`` MCP server offline: each is offered it in session/new (they advertise
``mcpCapabilities.http``), connects over streamable HTTP with the secret made for it and
lists the session's client tools (what ``tools/list`` answered is what they got); then,
against the scripted model of ``fake_model.py``, each completes a call answered over the
WebSocket."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from websockets.asyncio.client import ClientConnection, connect

from server.settings import Settings
from tests.peers.fake_model import FakeModel, call, say
from tests.peers.offline_agents import agent_table as offline_table
from tests.peers.offline_agents import private_home
from tests.peers.test_real_agents import agent_table
from tests.server.test_client_tools import (
    PICK,
    Served,
    client_tool,
    new_session,
    receive_until,
    reply,
    serving,
    start,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120), pytest.mark.anyio]


@pytest.mark.parametrize("name", ["claude", "codex", "gemini"])
async def test_a_real_agent_lists_the_client_tools(
    name: str,
    real_agents_installed: None,
    tmp_path: Path,
    make_settings: Callable[..., Settings],
) -> None:
    exe, table = agent_table(name, tmp_path / f"{name}-home")
    if not exe.exists():
        pytest.skip(f"{exe.name} is not installed in .peers (npm could not fetch it)")
    if name == "gemini":  # gemini connects no MCP server in a folder it does not trust
        settings = tmp_path / f"{name}-home" / ".gemini" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps({"security": {"folderTrust": {"enabled": False}}}))
    agents = tmp_path / "agents.toml"
    agents.write_text(table)
    env: dict[str, Any] = {"AGENTS_FILE": str(agents), "AGENT_START_TIMEOUT": 30}
    async with serving(make_settings, **env) as served:
        session = await new_session(served, agentId=name, clientTools=[PICK])
        assert "client-tools" in session["controls"]["mcpServers"], session["controls"]
        host = served.state.sessions.registry[session["id"]].client_tools
        assert host.offered
        with anyio.move_on_after(20):  # some connect at session/new, others at a prompt
            while host.lists == 0:  # noqa: ASYNC110 - the agent's request is the event
                await anyio.sleep(0.05)
        if host.lists == 0:
            await start(served, session["id"], "Use the pick tool.")
            with anyio.fail_after(60):
                while host.lists == 0:  # noqa: ASYNC110
                    await anyio.sleep(0.05)
        assert host.lists >= 1 and host.mcp._sessions  # initialized, then listed


# -- a whole call, answered over the WebSocket ---------------------------------------------

FINAL = "The colour is picked."


def pending(kind: str) -> Callable[[dict[str, Any]], bool]:
    def match(frame: dict[str, Any]) -> bool:
        if frame["type"] != "message":
            return False
        content = frame["message"]["content"]
        return bool(content["type"] == kind and content["outcome"] is None)

    return match


async def client_tool_call(served: Served, sid: str, ws: ClientConnection) -> dict[str, Any]:
    """The pending client_tool call as the viewer gets it. An agent that asks before it
    calls an MCP tool (claude's default mode asks for ``mcp__client-tools__pick``) is
    allowed once on the way."""
    while True:
        frame = await receive_until(
            ws, lambda f: pending("client_tool")(f) or pending("permission")(f), timeout=90
        )
        content = frame["message"]["content"]
        if content["type"] == "client_tool":
            return dict(content)
        option = next(o for o in content["options"] if o["kind"] == "allow_once")
        answer = await served.http.post(
            f"/api/sessions/{sid}/permissions/{content['requestId']}",
            json={"optionId": option["optionId"]},
        )
        assert answer.status_code == 200, answer.text


@pytest.mark.timeout(240)
@pytest.mark.parametrize("name", ["claude", "codex", "gemini"])
async def test_a_real_agent_calls_a_client_tool_answered_over_the_websocket(
    name: str,
    real_agents_installed: None,
    make_settings: Callable[..., Settings],
) -> None:
    """A turn of each real agent (in its sandbox) against the scripted model: the model
    calls the client tool by the agent's own name for it (read from what the agent offered
    in a first turn), the call reaches a WebSocket viewer as a ``client_tool`` message,
    the viewer's answer goes back to the agent over MCP, the model gets it as the tool's
    result and the turn ends with the model's final text."""
    with FakeModel([say("Ready.")]) as model:
        exe, table = offline_table(name, private_home(make_settings(), name), model.url)
        if not exe.exists():
            pytest.skip(f"{exe.name} is not installed in .peers (npm could not fetch it)")
        if name == "gemini":  # gemini connects no MCP server in a folder it does not trust
            path = private_home(make_settings(), name) / ".gemini" / "settings.json"
            settings = json.loads(path.read_text())
            settings["security"] = {"folderTrust": {"enabled": False}}
            path.write_text(json.dumps(settings))
        agents = private_home(make_settings(), name).parent / f"{name}-agents.toml"
        agents.write_text(table)
        env: dict[str, Any] = {"AGENTS_FILE": str(agents), "AGENT_START_TIMEOUT": 30}
        async with serving(make_settings, **env) as served:
            session = await new_session(served, agentId=name, clientTools=[PICK])
            sid = session["id"]
            assert session["sandbox"]["enabled"] is True
            first = await start(served, sid, "Are you ready?")
            assert "Ready." in await reply(served, sid, first, timeout=90)
            offered = [t for t in model.offered_tools() if t.endswith("pick")]
            assert len(offered) == 1, model.offered_tools()
            model.script = [call(offered[0], {"colour": "green"}), say(FINAL)]
            async with connect(f"{served.ws_url}/ws/sessions/{sid}") as ws:
                run_id = await start(served, sid, "Pick a colour in the page.")
                asked = await client_tool_call(served, sid, ws)
                assert (asked["name"], asked["input"]) == ("pick", {"colour": "green"})
                command = {
                    "type": "client_tool_result",
                    "callId": asked["callId"],
                    "result": {"picked": "green", "by": "the page"},
                    "id": "c1",
                }
                await ws.send(json.dumps(command))
                ack = await receive_until(ws, lambda f: f["type"] in ("ack", "error"))
                assert ack == {"type": "ack", "ref": "c1"}
            assert FINAL in await reply(served, sid, run_id, timeout=90)
            answered = await wait_for(served, sid, client_tool("answered", callId=asked["callId"]))
            assert answered["content"]["by"] == {"via": "websocket", "user": None}
            # the model got the page's answer back as the tool's result
            assert model.answered() == model.issued and len(model.issued) == 1
            assert "the page" in json.dumps(model.tool_results())
