"""What a sandboxed agent is shown besides its workspace: for a worktree session what git
needs of the repository's ``.git`` (it can commit; hooks stay read-only; the repository's
files stay hidden), and ``AGENTS_FILE``'s ``sandbox`` paths, ``~/x`` at ``$HOME/x``.
Real server (in process), real agent (``shell_agent.py``), real bubblewrap."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from server.app import create_app
from server.settings import Settings
from tests.helpers import create_session, messages, run_ended, wait_for_message

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(90),
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
]

AGENT = Path(__file__).with_name("shell_agent.py")


def run(client: TestClient, session_id: str, command: str) -> tuple[int | None, str]:
    response = client.post(f"/api/sessions/{session_id}/prompt", json={"text": command})
    assert response.status_code == 202, response.text
    run_id = response.json()["runId"]
    wait_for_message(client, session_id, run_ended(run_id))
    text = "".join(
        m["content"]["text"]
        for m in messages(client, session_id)
        if m["runId"] == run_id
        and m["role"] == "agent"
        and m["content"]["type"] == "text"
        and not m["content"]["partial"]
    )
    head, _, output = text.partition("\n")
    return (int(head[3:]) if head.startswith("rc=") else None), output


@pytest.fixture
def shell_client(
    tmp_path: Path, workspace_root: Path, make_settings: Callable[..., Settings]
) -> Iterator[Callable[[str], TestClient]]:
    clients: list[TestClient] = []

    def make(extra: str) -> TestClient:
        agents = tmp_path / "agents.toml"
        agents.write_text(f'[agents.shell]\ncommand = "{sys.executable} {AGENT}"\n{extra}\n')
        settings = make_settings(AGENTS_FILE=str(agents), AGENT_SANDBOX="on")
        client = TestClient(create_app(settings))
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


def test_a_worktree_session_commits_but_cannot_touch_hooks_or_the_repository(
    workspace_root: Path, shell_client: Callable[[str], TestClient]
) -> None:
    repo = workspace_root / "proj"
    repo.mkdir()
    (repo / "README.md").write_text("the repository's own copy\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "first"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True
        )
    client = shell_client("")
    repo_id = next(r["id"] for r in client.get("/api/repos").json()["repos"] if r["name"] == "proj")
    sid = create_session(client, repo_id, agentId="shell", isolation="worktree")["id"]
    commit = (
        "echo new > new.txt && git add new.txt"
        " && git -c user.name=a -c user.email=a@a commit -qm agent && git log --oneline | wc -l"
    )
    code, output = run(client, sid, commit)
    assert (code, output.strip()) == (0, "2"), output
    hooks = repo / ".git" / "hooks" / "post-commit"
    code, _ = run(client, sid, f"echo 'touch /tmp/pwned' > {hooks}")
    assert code != 0 and not hooks.exists()
    code, _ = run(client, sid, "git config core.fsmonitor 'touch /tmp/pwned'")
    assert code != 0
    code, _ = run(client, sid, f"cat {repo / 'README.md'}")  # the repository's working files
    assert code != 0
    log = subprocess.run(
        ["git", "log", "--all", "--oneline"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout
    assert "agent" in log  # the commit is in the repository's objects and refs


def test_agents_file_paths_under_home_are_shown_in_the_private_home(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    workspace_root: Path,
    shell_client: Callable[[str], TestClient],
) -> None:
    user_home = tmp_path / "user-home"
    (user_home / ".codex").mkdir(parents=True)
    (user_home / ".codex" / "auth.json").write_text('{"login": "yes"}\n')
    (user_home / "secret.txt").write_text("the host user's own\n")
    monkeypatch.setenv("HOME", str(user_home))  # "~" is the server user's home
    client = shell_client('sandbox = { write = ["~/.codex"] }')
    repo_id = next(r["id"] for r in client.get("/api/repos").json()["repos"] if r["name"] == "demo")
    sid = create_session(client, repo_id, agentId="shell")["id"]
    code, output = run(client, sid, 'cat "$HOME/.codex/auth.json" && echo "$HOME"')
    assert code == 0 and '"login": "yes"' in output, output
    assert output.strip().endswith("/agent-homes/shell")
    code, _ = run(client, sid, 'echo more > "$HOME/.codex/sessions.json"')  # write = writable
    assert code == 0 and (user_home / ".codex" / "sessions.json").exists()
    for hidden in (user_home / "secret.txt", user_home / ".codex" / "auth.json"):
        code, _ = run(client, sid, f"cat {hidden}")
        assert code != 0, hidden


def test_limits_are_written_to_the_agents_own_cgroups(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(
        AGENT_SANDBOX="on", AGENT_MEMORY_MAX="300M", AGENT_PIDS_MAX="77", AGENT_CPU_MAX="0.5"
    )
    with TestClient(create_app(settings)) as client:
        repo_id = client.get("/api/repos").json()["repos"][0]["id"]
        sid = create_session(client, repo_id)["id"]
        domain = client.app.state.agent_sessions.sessions  # type: ignore[attr-defined]
        process = domain.registry[sid].client.connection.process
        if process.limits is None:
            pytest.skip("no writable cgroup for limits on this host")
        values: dict[str, str] = {}
        for directory in process.limits.agent_dirs(process.pid):
            assert str(process.pid) in (directory / "cgroup.procs").read_text().split()
            for name in (
                "memory.max",
                "memory.limit_in_bytes",
                "pids.max",
                "cpu.max",
                "cpu.cfs_quota_us",
            ):
                if (directory / name).exists():
                    values[name] = (directory / name).read_text().strip()
        assert values.get("pids.max") == "77"
        assert str(300 * 1024 * 1024) in (
            values.get("memory.max"),
            values.get("memory.limit_in_bytes"),
        )
        assert (
            values.get("cpu.max", "").startswith("50000 ")
            or values.get("cpu.cfs_quota_us") == "50000"
        )
        dirs = process.limits.agent_dirs(process.pid)
        assert client.post(f"/api/sessions/{sid}/complete").status_code == 200
        assert not any(d.exists() for d in dirs)  # removed with the agent
