"""The real coding agents (claude-agent-acp, codex-acp, gemini --acp) take the server's
``client-tools`` MCP server offline: each is offered it in session/new (they advertise
``mcpCapabilities.http``), connects over streamable HTTP with the secret made for it and
lists the session's client tools (what ``tools/list`` answered is what they got). A turn
that calls one needs a model; none answers here (the endpoints point at a closed port)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from server.settings import Settings
from tests.peers.test_real_agents import agent_table
from tests.server.test_client_tools import PICK, new_session, serving, start

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
