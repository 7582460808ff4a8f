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

import pytest
from starlette.testclient import TestClient

from server.app import create_app
from server.settings import Settings
from tests.helpers import create_session, is_type, prompt, run_ended, wait_for_message
from tests.peers.fake_model import FakeModel, Reply, call, say
from tests.peers.offline_agents import agent_table, private_home
from tests.peers.support import agent_texts, answer_permission, run_end, turn_messages

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

FILE = "hello.txt"
TEXT = "written by the agent\n"
FINAL = "The file is written."
SHELL = f"printf 'written by the agent\\n' > {FILE}"


def write_script(name: str, path: Path) -> list[Reply]:
    """The model's script: write FILE (with the agent's own tool), then say FINAL."""
    if name == "claude":
        first = call("Write", {"file_path": str(path), "content": TEXT})
    elif name == "gemini":
        first = call("run_shell_command", {"command": SHELL, "description": "write the file"})
    else:
        # codex's default mode runs commands in a read-only sandbox: asking to run outside
        # it is what makes codex ask the client first.
        first = call(
            "exec_command",
            {
                "cmd": SHELL,
                "login": False,
                "sandbox_permissions": "require_escalated",
                "justification": f"Write {FILE}?",
            },
        )
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
    exe, table = agent_table(name, private_home(make_settings(), name), model.url)
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
        wait_for_message(client, sid, is_type("permission", outcome=None))
        assert not (workspace / FILE).exists()  # the tool waits for the person's answer
        asked = answer_permission(client, sid, run_id, "allow_once")
        wait_for_message(client, sid, run_ended(run_id), timeout=60)
        turn = turn_messages(client, sid, run_id)
        end = run_end(turn)
        assert (end["status"], end["stopReason"]) == ("completed", "end_turn"), end
        assert (workspace / FILE).read_text() == TEXT
        assert agent_texts(turn)[-1] == FINAL
        # The agent ran the one tool the model asked for and sent its result back.
        assert len(model.issued) == 1 and model.answered() == model.issued
        tools = [m["content"] for m in turn if m["content"]["type"] == "tool"]
        assert {t["toolCallId"] for t in tools} == {asked["toolCallId"]}
        assert tools[-1]["status"] == "completed", tools[-1]
        assert all(r.path.startswith(("/v1/", "/v1beta/")) for r in model.main_requests())


def test_gemini_write_file_cannot_create_a_file_through_the_client(
    real_agents_installed: None,
    tmp_path: Path,
    model: FakeModel,
    make_settings: Callable[..., Settings],
) -> None:
    """gemini 0.61 reads a file through the client's ``fs/read_text_file`` before writing
    it, and takes the client's answer for a missing file (-32002 "Resource not found") for
    a failure: its ``normalizeFileSystemError`` turns that message into ENOENT only when
    the rejection is an ``Error``, and its ACP SDK rejects with the plain error object. So
    ``write_file`` of a new file fails before any permission is asked. This test says so,
    and fails once either side changes (then the full turn above can use ``write_file``)."""
    exe, table = agent_table("gemini", private_home(make_settings(), "gemini"), model.url)
    if not exe.exists():
        pytest.skip(f"{exe.name} is not installed in .peers (npm could not fetch it)")
    (tmp_path / "agents.toml").write_text(table)
    settings = make_settings(AGENTS_FILE=str(tmp_path / "agents.toml"), AGENT_START_TIMEOUT=30)
    with TestClient(create_app(settings)) as client:
        repos = client.get("/api/repos").json()["repos"]
        session = create_session(client, repos[0]["id"], agentId="gemini")
        sid, workspace = session["id"], Path(session["workspace"]["path"])
        target = workspace / FILE
        model.script = [call("write_file", {"file_path": str(target), "content": TEXT}), say(FINAL)]
        run_id = prompt(client, sid, f"Write {FILE}")
        wait_for_message(client, sid, run_ended(run_id), timeout=60)
        turn = turn_messages(client, sid, run_id)
        assert not [m for m in turn if m["content"]["type"] == "permission"]
        tools = [m["content"] for m in turn if m["content"]["type"] == "tool"]
        assert tools[-1]["status"] == "error", tools
        assert "Error checking existing file: Resource not found" in json.dumps(tools[-1])
        assert not target.exists()
        assert model.answered() == ["write_file"]  # the error went back to the model
