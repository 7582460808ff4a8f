"""The real coding agents (claude-agent-acp, codex-acp, gemini --acp; installed into
.peers by ``scripts/install-peers``) through the real server, offline: ACP.md §7 says how
each starts without a model (a dummy key, its own HOME and TMPDIR, any model endpoint
pointed at a closed port). Listing and switching their modes and config options needs no
model call. Each test skips only when node/npm or the package is missing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from server.app import create_app
from server.settings import Settings
from tests.helpers import create_session, pid_gone
from tests.peers.conftest import PEERS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

NOWHERE = "http://127.0.0.1:9"  # a closed port: any model call fails at once
BIN = PEERS / "node_modules" / ".bin"
CODEX = PEERS / "node_modules" / "@zed-industries" / "codex-acp-linux-x64" / "bin" / "codex-acp"


def toml_table(env: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items()) + "}"


def agent_table(name: str, home: Path) -> tuple[Path, str]:
    """The agent's executable and its AGENTS_FILE table (command, env, authMethod)."""
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    env = {"HOME": str(home), "TMPDIR": str(home / "tmp")}
    if name == "claude":
        exe, args, auth = BIN / "claude-agent-acp", "", None
        env |= {
            "ANTHROPIC_API_KEY": "offline",
            "ANTHROPIC_BASE_URL": NOWHERE,
            "IS_SANDBOX": "1",
            "CLAUDE_CODE_TMPDIR": str(home / "tmp"),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
    elif name == "codex":
        exe, args, auth = CODEX, "", "openai-api-key"
        env |= {"OPENAI_API_KEY": "offline", "CODEX_HOME": str(home / ".codex")}
        (home / ".codex").mkdir(exist_ok=True)
    else:
        exe, args, auth = BIN / "gemini", " --acp", None
        env |= {"GEMINI_API_KEY": "offline", "GOOGLE_GEMINI_BASE_URL": NOWHERE}
    lines = [f"[agents.{name}]", f"command = {json.dumps(str(exe) + args)}"]
    lines.append(f"env = {toml_table(env)}")
    if auth:
        lines.append(f"authMethod = {json.dumps(auth)}")
    return exe, "\n".join(lines) + "\n"


@pytest.fixture(params=["claude", "codex", "gemini"])
def real_agent(
    request: pytest.FixtureRequest,
    real_agents_installed: None,
    tmp_path: Path,
    make_settings: Callable[..., Settings],
) -> tuple[str, Settings]:
    name = str(request.param)
    exe, table = agent_table(name, tmp_path / f"{name}-home")
    if not exe.exists():
        pytest.skip(f"{exe.name} is not installed in .peers (npm could not fetch it)")
    path = tmp_path / "agents.toml"
    path.write_text(table)
    # Measured here: a whole test takes 1.3 s (codex), 2.8 s (claude), 3.0 s (gemini)
    # warm; the first start after an install is slower. Bounded: start 30 s, test 90 s.
    return name, make_settings(AGENTS_FILE=str(path), AGENT_START_TIMEOUT=30)


def other(values: list[str], current: Any) -> str:
    return next(v for v in values if v != current)


def test_list_and_switch_controls_offline(real_agent: tuple[str, Settings]) -> None:
    name, settings = real_agent
    with TestClient(create_app(settings)) as client:
        repos = client.get("/api/repos").json()["repos"]
        session = create_session(client, repos[0]["id"], agentId=name)
        sid = session["id"]
        ctrl = client.get(f"/api/sessions/{sid}/controls").json()
        print(name, json.dumps(ctrl))  # what the README reports (pytest -s shows it)
        modes = ctrl["modes"]
        assert modes is not None and len(modes["available"]) >= 2, ctrl
        mode_ids = [m["id"] for m in modes["available"]]
        # plan where offered (offline, gemini answered set_mode autoEdit with -32603)
        target = "plan" if "plan" in mode_ids else other(mode_ids, modes["currentModeId"])
        response = client.put(f"/api/sessions/{sid}/mode", json={"modeId": target})
        assert response.status_code == 200, response.text
        assert response.json()["modes"]["currentModeId"] == target
        refused = client.put(f"/api/sessions/{sid}/mode", json={"modeId": "no-such-mode"})
        assert refused.status_code == 422, refused.text
        options = [o for o in ctrl["config"] if len(o["options"]) >= 2]
        if name != "gemini":  # claude: model; codex: model and reasoning effort
            assert options, ctrl["config"]
        for option in options[:2]:
            values = [c["value"] for c in option["options"]]
            value = other(values, option["currentValue"])
            url = f"/api/sessions/{sid}/config/{option['id']}"
            changed = client.put(url, json={"value": value})
            assert changed.status_code == 200, changed.text
            now = next(o for o in changed.json()["config"] if o["id"] == option["id"])
            assert now["currentValue"] == value
        sessions = client.app.state.agent_sessions.sessions  # type: ignore[attr-defined]
        pid = int(sessions.registry[sid].client.connection.process.pid)
        assert client.delete(f"/api/sessions/{sid}").status_code == 200
        assert sid not in sessions.registry and pid_gone(pid)
