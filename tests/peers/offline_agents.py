"""How a test starts a real agent (claude-agent-acp, codex-acp, gemini ``--acp``) against
the scripted model of ``fake_model.py``: its AGENTS_FILE table, with its own HOME and
TMPDIR, a dummy key, its model endpoint on loopback and nothing else reachable."""

from __future__ import annotations

import json
from pathlib import Path

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


def agent_table(name: str, home: Path, model_url: str) -> tuple[Path, str]:
    """The agent's executable and its AGENTS_FILE table, its model at ``model_url``."""
    (home / "tmp").mkdir(parents=True, exist_ok=True)
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
        env |= {"OPENAI_API_KEY": "offline", "CODEX_HOME": str(home / ".codex")}
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
