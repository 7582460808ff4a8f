"""A full turn of each real agent (claude-agent-acp, codex-acp, gemini ``--acp``) through
the real server, against the scripted model of ``fake_model.py`` on loopback: the prompt
goes in, the model asks for a tool that writes a file in the workspace, the agent's
permission request reaches the client and is answered allow, the tool runs, the model
gets the tool's result back and answers a final text, the turn ends ``end_turn`` and the
file is there. Nothing leaves loopback: each agent's only model endpoint is the fake one."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from server.app import create_app
from server.settings import Settings
from tests.helpers import create_session, prompt, run_ended, wait_for_message
from tests.peers.fake_model import FakeModel, Reply, call, say
from tests.peers.support import agent_texts, answer_permission, run_end, turn_messages
from tests.peers.test_real_agents import BIN, CODEX, toml_table

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

FILE = "hello.txt"
TEXT = "written by the agent\n"
FINAL = "The file is written."
SHELL = f"printf 'written by the agent\\n' > {FILE}"


def agent_table(name: str, home: Path, model_url: str) -> tuple[Path, str]:
    """The agent's executable and its AGENTS_FILE table, its model at ``model_url``."""
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    env = {"HOME": str(home), "TMPDIR": str(home / "tmp")}
    auth = None
    if name == "claude":
        exe, args = BIN / "claude-agent-acp", ""
        env |= {
            "ANTHROPIC_API_KEY": "offline",
            "ANTHROPIC_BASE_URL": model_url,
            "IS_SANDBOX": "1",
            "CLAUDE_CODE_TMPDIR": str(home / "tmp"),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
    elif name == "codex":
        exe, auth = CODEX, "openai-api-key"
        provider = toml_table(
            {
                "name": "fake",
                "base_url": f"{model_url}/v1",
                "env_key": "OPENAI_API_KEY",
                "wire_api": "responses",
            }
        )
        args = f" -c model_provider=fake -c 'model_providers.fake={provider}'"
        env |= {"OPENAI_API_KEY": "offline", "CODEX_HOME": str(home / ".codex")}
        (home / ".codex").mkdir(exist_ok=True)
    else:
        exe, args = BIN / "gemini", " --acp"
        env |= {"GEMINI_API_KEY": "offline", "GOOGLE_GEMINI_BASE_URL": model_url}
    lines = [f"[agents.{name}]", f"command = {json.dumps(str(exe) + args)}"]
    lines.append(f"env = {toml_table(env)}")
    if auth:
        lines.append(f"authMethod = {json.dumps(auth)}")
    return exe, "\n".join(lines) + "\n"


def write_script(name: str, path: Path) -> list[Reply]:
    """The model's script: write FILE (with the agent's own tool), then say FINAL."""
    if name == "claude":
        first = call("Write", {"file_path": str(path), "content": TEXT})
    elif name == "gemini":
        first = call("run_shell_command", {"command": SHELL, "description": "write the file"})
    else:
        first = call("shell", {"command": ["bash", "-c", SHELL]})
    return [first, say(FINAL)]


@pytest.fixture
def model() -> Iterator[FakeModel]:
    with FakeModel([]) as fake:
        yield fake


@pytest.fixture(params=["claude", "gemini", "codex"])
def agent(
    request: pytest.FixtureRequest,
    real_agents_installed: None,
    tmp_path: Path,
    model: FakeModel,
    make_settings: Callable[..., Settings],
) -> tuple[str, Settings]:
    name = str(request.param)
    exe, table = agent_table(name, tmp_path / f"{name}-home", model.url)
    if not exe.exists():
        pytest.skip(f"{exe.name} is not installed in .peers (npm could not fetch it)")
    path = tmp_path / "agents.toml"
    path.write_text(table)
    return name, make_settings(AGENTS_FILE=str(path), AGENT_START_TIMEOUT=30)


def test_full_turn_with_a_permission(agent: tuple[str, Settings], model: FakeModel) -> None:
    name, settings = agent
    with TestClient(create_app(settings)) as client:
        repos = client.get("/api/repos").json()["repos"]
        session = create_session(client, repos[0]["id"], agentId=name)
        sid, workspace = session["id"], Path(session["workspace"]["path"])
        model.script = write_script(name, workspace / FILE)
        run_id = prompt(client, sid, f"Write {FILE}")
        asked = answer_permission(client, sid, run_id, "allow_once")
        wait_for_message(client, sid, run_ended(run_id), timeout=60)
        turn = turn_messages(client, sid, run_id)
        for m in turn:
            print(json.dumps(m["content"])[:300])
        for r in model.requests:
            print(r.api, r.path, r.main, json.dumps(r.body)[:300])
        end = run_end(turn)
        assert (end["status"], end["stopReason"]) == ("completed", "end_turn"), end
        assert (workspace / FILE).read_text() == TEXT
        assert agent_texts(turn)[-1] == FINAL
        assert len(model.tool_results()) == 1, model.tool_results()
        print(asked)
