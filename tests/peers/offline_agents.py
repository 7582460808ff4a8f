"""How a test starts a real agent (claude-agent-acp, codex-acp, gemini ``--acp``) against
the scripted model of ``fake_model.py``: its AGENTS_FILE table, a dummy key, its model
endpoint on loopback and nothing else reachable.

Its settings live where a sandboxed agent finds them without any bind: in its private
home, ``<data dir>/agent-homes/<agentId>`` (docs/sandbox.md), which the sandbox shows
read-write at the same path and makes its ``HOME``. The test seeds that folder before the
server starts (``~/.codex``, ``~/.gemini/settings.json``); naming it ``HOME`` in the
table too keeps the same layout when bubblewrap is missing and the sandbox is off. A
folder of the test's elsewhere (under the host's ``/tmp``) would not be seen: the sandbox
has its own ``/tmp``."""

from __future__ import annotations

import json
from pathlib import Path

from server.sandbox.host import HOMES, data_directory
from server.settings import Settings
from tests.peers.test_real_agents import BIN, CODEX, toml_table

# Keeps what the agents fetch besides the model on loopback (measured with strace:
# claude fetches a plugin blocklist from raw.githubusercontent.com even with
# CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC): a proxy at a closed port, so any such
# request fails at once, without even a DNS lookup; the model is reached directly.
OFFLINE = {
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost",
}


def private_home(settings: Settings, agent_id: str) -> Path:
    """Where the server keeps ``agent_id``'s private home (its sandbox's ``HOME``)."""
    return data_directory(settings) / HOMES / agent_id


def agent_table(name: str, home: Path, model_url: str) -> tuple[Path, str]:
    """The agent's executable and its AGENTS_FILE table, its model at ``model_url``;
    ``home`` is its private home (``private_home``), seeded here."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)  # as the server makes it
    (home / "tmp").mkdir(exist_ok=True)
    env = {"HOME": str(home), "TMPDIR": str(home / "tmp")} | OFFLINE
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
        env["OPENAI_API_KEY"] = "offline"  # its CODEX_HOME is the default, ~/.codex
        (home / ".codex").mkdir(exist_ok=True)
    else:
        exe, args = BIN / "gemini", " --acp"
        env |= {"GEMINI_API_KEY": "offline", "GOOGLE_GEMINI_BASE_URL": model_url}
        (home / ".gemini").mkdir(exist_ok=True)  # no usage statistics to play.googleapis.com
        settings = {"privacy": {"usageStatisticsEnabled": False}}
        (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    lines = [f"[agents.{name}]", f"command = {json.dumps(str(exe) + args)}"]
    lines.append(f"env = {toml_table(env)}")
    if auth:
        lines.append(f"authMethod = {json.dumps(auth)}")
    return exe, "\n".join(lines) + "\n"
