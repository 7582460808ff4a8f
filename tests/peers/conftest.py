"""Fixtures for the third-party ACP agents (installed by ``scripts/install-peers``).

- ``peers_installed``: runs ``scripts/install-peers`` once per test session (it fetches
  nothing when everything is there); a failing install fails the tests that need it.
- ``zed_agent_command``: AGENT_COMMAND for Zed's TypeScript example agent under tsx;
  skips when node/npm are missing.
- ``chuk_echo_command``: AGENT_COMMAND for the echo agent bundled with chuk-acp.
- ``make_settings``: the suite's, with ``AGENT_SANDBOX=on``.
- ``sdk_agent_command``: AGENT_COMMAND for ``sdk_agent.py``, an agent built on the
  official Python SDK (agent-client-protocol).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from server.settings import Settings, load_settings
from tests.conftest import ROOT, settings_env

PEERS = ROOT / ".peers"
TSX = PEERS / "node_modules" / ".bin" / "tsx"
ZED_AGENT = (
    PEERS
    / "node_modules"
    / "@zed-industries"
    / "agent-client-protocol"
    / "typescript"
    / "examples"
    / "agent.ts"
)
INSTALL = ROOT / "scripts" / "install-peers"


@pytest.fixture
def make_settings(tmp_path: Path, workspace_root: Path) -> Callable[..., Settings]:
    """As the suite's, with the agent sandbox on (where bubblewrap is installed): real
    agents must work inside it."""
    sandbox = "on" if shutil.which("bwrap") else "off"

    def make(**env: Any) -> Settings:
        return load_settings(
            settings_env(tmp_path, workspace_root, **{"AGENT_SANDBOX": sandbox, **env}),
            env_file=None,
        )

    return make


@pytest.fixture(scope="session")
def peers_installed() -> None:
    result = subprocess.run(  # noqa: S603 - our own script
        [str(INSTALL)], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    if result.returncode != 0:
        pytest.fail(f"scripts/install-peers failed ({result.returncode}):\n{result.stderr[-2000:]}")


@pytest.fixture(scope="session")
def zed_agent_command(peers_installed: None) -> str:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Zed's example agent needs node and npm, which this machine lacks")
    assert TSX.exists() and ZED_AGENT.exists(), "install-peers succeeded but left no tsx/agent.ts"
    return shlex.join([str(TSX), str(ZED_AGENT)])


@pytest.fixture(scope="session")
def chuk_echo_script(peers_installed: None) -> Path:
    importlib.invalidate_caches()  # install-peers may have installed it just now
    dist = importlib.metadata.distribution("chuk-acp")
    found = [dist.locate_file(f).resolve() for f in dist.files or [] if f.name == "echo_agent.py"]
    assert found and found[0].is_file(), "chuk-acp is installed without its examples/echo_agent.py"
    return Path(found[0])


@pytest.fixture
def chuk_echo_command(chuk_echo_script: Path, tmp_path: Path) -> str:
    # The echo agent logs (DEBUG) to $TMPDIR/echo_agent.log: keep that in the test's folder,
    # in the agent's private home (the data directory's agent-homes/default), which its
    # sandbox shows read-write.
    home = tmp_path / "agent-homes" / "default"
    home.mkdir(parents=True, exist_ok=True)
    return shlex.join(["env", f"TMPDIR={home}", sys.executable, str(chuk_echo_script)])


@pytest.fixture
def sdk_agent_command(peers_installed: None) -> str:
    script = Path(__file__).with_name("sdk_agent.py")
    return shlex.join([sys.executable, str(script)])


@pytest.fixture(scope="session")
def real_agents_installed(peers_installed: None) -> None:
    """claude-agent-acp, codex-acp and gemini-cli in .peers (each test checks its own)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("the real agents need node and npm, which this machine lacks")
