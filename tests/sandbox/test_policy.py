"""The sans-I/O parts of the sandbox: a policy becomes bubblewrap's command line, the
fixed environment, the egress proxy's host rules and request parsing, AGENTS_FILE's
``sandbox`` and ``network`` entries, the settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_bridge.sandbox import (
    MCP_SOCKET,
    PROXY_PORT,
    PROXY_SOCKET,
    SandboxPolicy,
    bwrap_argv,
    host_secrets,
    installation_roots,
    proxy_port,
    sandbox_environment,
)
from server.sandbox.config import parse_agent
from server.sandbox.egress import host_allowed, mcp_head, parse_head
from server.sandbox.host import git_paths
from server.settings import SettingsError, load_settings

LAYOUT = {"/usr": "", "/etc": "", "/bin": "usr/bin", "/lib": "usr/lib", "/lib64": None}
WS, HOME = Path("/w/repo"), Path("/data/agent-homes/a")


def binds(argv: list[str]) -> list[tuple[str, str, str]]:
    found = []
    for i, arg in enumerate(argv):
        if arg.startswith(("--bind", "--ro-bind", "--symlink")):
            found.append((arg, argv[i + 1], argv[i + 2]))
    return found


def test_the_command_walls_the_agent_in() -> None:
    argv = bwrap_argv(SandboxPolicy(WS, HOME), ["agent", "--acp"], layout=LAYOUT)
    assert argv[:1] == ["bwrap"]
    for flag in ("--unshare-user", "--unshare-pid", "--unshare-ipc", "--die-with-parent"):
        assert flag in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert "--unshare-net" not in argv  # open network
    assert argv[-3:] == ["--", "agent", "--acp"]
    assert argv[argv.index("--chdir") + 1] == str(WS)
    found = binds(argv)
    assert ("--ro-bind", "/usr", "/usr") in found and ("--ro-bind", "/etc", "/etc") in found
    assert ("--symlink", "usr/bin", "/bin") in found
    assert not any(target == "/lib64" for *_, target in found)
    assert ("--bind", str(WS), str(WS)) in found and ("--bind", str(HOME), str(HOME)) in found
    assert argv[argv.index("--proc") + 1] == "/proc" and argv[argv.index("--dev") + 1] == "/dev"
    assert "/tmp" in argv and "/run" in argv  # private tmpfs


def test_children_are_bound_after_their_parents() -> None:
    policy = SandboxPolicy(
        WS,
        HOME,
        read=(Path("/r/git"),),
        write=(Path("/r/git/objects"),),
        mounts=((Path("/root/.codex"), HOME / ".codex", True),),
    )
    found = [(flag, target) for flag, _, target in binds(bwrap_argv(policy, ["a"], layout=LAYOUT))]
    assert found.index(("--ro-bind-try", "/r/git")) < found.index(("--bind-try", "/r/git/objects"))
    assert found.index(("--bind", str(HOME))) < found.index(("--bind-try", str(HOME / ".codex")))


def test_network_none_and_proxy() -> None:
    none = bwrap_argv(SandboxPolicy(WS, HOME, network="none"), ["a"], layout=LAYOUT)
    assert "--unshare-net" in none and PROXY_SOCKET not in none
    sock = Path("/tmp/egress/1.sock")
    proxy = bwrap_argv(
        SandboxPolicy(WS, HOME, network="proxy", proxy_socket=sock), ["a", "b"], layout=LAYOUT
    )
    assert "--unshare-net" in proxy
    assert ("--ro-bind", str(sock), PROXY_SOCKET) in binds(proxy)
    tail = proxy[proxy.index("--") + 1 :]
    assert tail[-3:] == ["--", "a", "b"] and tail[3].endswith("egress_forwarder.py")
    with pytest.raises(ValueError, match="proxy"):
        SandboxPolicy(WS, HOME, network="proxy")


def test_the_mcp_relay_is_a_second_forwarded_port_under_none_and_proxy() -> None:
    mcp = Path("/tmp/egress/2.sock")
    none = bwrap_argv(
        SandboxPolicy(WS, HOME, network="none", mcp_socket=mcp, mcp_port=8000), ["a"], layout=LAYOUT
    )
    assert ("--ro-bind", str(mcp), MCP_SOCKET) in binds(none)
    tail = none[none.index("--") + 1 :]
    assert tail[3].endswith("egress_forwarder.py") and tail[4:] == ["8000", MCP_SOCKET, "--", "a"]
    proxy = bwrap_argv(
        SandboxPolicy(
            WS,
            HOME,
            network="proxy",
            proxy_socket=Path("/tmp/egress/1.sock"),
            mcp_socket=mcp,
            mcp_port=8000,
        ),
        ["a"],
        layout=LAYOUT,
    )
    tail = proxy[proxy.index("--") + 1 :]
    assert tail[4:] == [str(PROXY_PORT), PROXY_SOCKET, "8000", MCP_SOCKET, "--", "a"]
    # the host's own network reaches the server directly: no forwarder, no socket
    open_ = bwrap_argv(SandboxPolicy(WS, HOME, mcp_socket=mcp, mcp_port=8000), ["a"], layout=LAYOUT)
    assert MCP_SOCKET not in open_ and open_[-2:] == ["--", "a"]
    with pytest.raises(ValueError, match="port"):
        SandboxPolicy(WS, HOME, network="none", mcp_socket=mcp)


def test_a_server_on_the_proxys_port_moves_the_proxy_aside() -> None:
    """The relay keeps the server's own port (the agent's MCP URL); the proxy takes the
    next one when that port is its own."""
    assert proxy_port(8000) == PROXY_PORT and proxy_port(PROXY_PORT) == PROXY_PORT + 1
    mcp, egress = Path("/tmp/egress/2.sock"), Path("/tmp/egress/1.sock")
    policy = SandboxPolicy(
        WS,
        HOME,
        network="proxy",
        proxy_socket=egress,
        mcp_socket=mcp,
        mcp_port=PROXY_PORT,
        proxy_port=proxy_port(PROXY_PORT),
    )
    argv = bwrap_argv(policy, ["a"], layout=LAYOUT)
    assert ("--ro-bind", str(mcp), MCP_SOCKET) in binds(argv)
    tail = argv[argv.index("--") + 1 :]
    assert tail[4:] == [str(PROXY_PORT + 1), PROXY_SOCKET, str(PROXY_PORT), MCP_SOCKET, "--", "a"]
    with pytest.raises(ValueError, match="share port"):
        SandboxPolicy(
            WS, HOME, network="proxy", proxy_socket=egress, mcp_socket=mcp, mcp_port=PROXY_PORT
        )


SID = "0b9c6c4e-61a4-4c55-9a0e-1d2f3a4b5c6d"


def test_the_mcp_relay_lets_through_only_the_sessions_mcp_path() -> None:
    head = (
        f"POST /mcp/sessions/{SID} HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n"
        "Connection: keep-alive\r\nKeep-Alive: timeout=5\r\nAuthorization: Bearer s\r\n"
    ).encode()
    assert (
        mcp_head(head, SID)
        == (
            f"POST /mcp/sessions/{SID} HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n"
            "Authorization: Bearer s\r\nConnection: close\r\n\r\n"
        ).encode()
    )
    assert mcp_head(f"GET /mcp/sessions/{SID}?x=1 HTTP/1.1\r\n".encode(), SID) is not None
    refused = [
        f"POST /mcp/sessions/{SID}/../../api/sessions HTTP/1.1\r\n",
        "POST /mcp/sessions/another HTTP/1.1\r\n",
        "GET /api/sessions HTTP/1.1\r\n",
        f"PUT /mcp/sessions/{SID} HTTP/1.1\r\n",
        f"CONNECT /mcp/sessions/{SID} HTTP/1.1\r\n",
        f"GET http://127.0.0.1:8000/mcp/sessions/{SID} HTTP/1.1\r\n",
        f"GET /mcp/sessions/{SID} HTTP/2\r\n",
        "garbage\r\n",
    ]
    for line in refused:
        assert mcp_head(line.encode(), SID) is None, line


def test_the_environment_is_a_fixed_list() -> None:
    source = {
        "PATH": "/usr/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "TERM": "xterm",
        "HOME": "/root",
        "AGENT_SESSIONS_SESSION": "s1",
        "API_TOKEN": "t",
        "DATABASE_URL": "sqlite://",
        "CLUSTER_SECRET": "c",
        "USER": "root",
    }
    env = sandbox_environment(source, {"MODEL_KEY": "k"}, HOME, "proxy")
    assert env["HOME"] == str(HOME) and env["TMPDIR"] == "/tmp"
    assert env["HTTPS_PROXY"].startswith("http://127.0.0.1:")
    assert env["MODEL_KEY"] == "k" and env["AGENT_SESSIONS_SESSION"] == "s1"
    for secret in ("API_TOKEN", "DATABASE_URL", "CLUSTER_SECRET", "USER"):
        assert secret not in env
    assert "HTTPS_PROXY" not in sandbox_environment(source, {}, HOME, "none")
    moved = sandbox_environment(source, {}, HOME, "proxy", proxy_port(PROXY_PORT))
    assert moved["HTTPS_PROXY"] == moved["HTTP_PROXY"] == f"http://127.0.0.1:{PROXY_PORT + 1}"


def test_installation_roots(tmp_path: Path) -> None:
    peers = tmp_path / ".peers" / "node_modules" / "@x" / "agent" / "bin"
    peers.mkdir(parents=True)
    (peers / "agent").write_text("#!/usr/bin/env node\n")
    (peers / "agent").chmod(0o755)
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /opt/python/bin\n")
    (venv / "bin" / "python").write_text("")
    roots = installation_roots([str(peers / "agent"), str(venv / "bin" / "python")], {})
    assert tmp_path / ".peers" in roots
    assert venv in roots and Path("/opt/python") in roots
    assert not any(r.is_relative_to("/usr") for r in roots)


def test_git_paths_of_a_worktree(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    gitdir = root / "repo" / ".git" / "worktrees" / "s1"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    tree = root / ".worktrees" / "s1"
    tree.mkdir(parents=True)
    (tree / ".git").write_text(f"gitdir: {gitdir}\n")
    common = root / "repo" / ".git"
    read, write = git_paths(tree, root)
    assert read == [common]
    assert write == [gitdir, common / "objects", common / "refs", common / "logs"]
    (tree / ".git").write_text("gitdir: /elsewhere/.git/worktrees/s1\n")
    assert git_paths(tree, root) == ([], [])  # never a .git outside the workspace root


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("api.example.com", True),
        ("API.Example.com.", True),
        ("deep.api.example.com", True),
        ("example.com", False),
        ("evil-example.com", False),
        ("registry.npmjs.org", True),
        ("npmjs.org", False),
        ("127.0.0.1", False),
        ("", False),
    ],
)
def test_host_patterns(host: str, allowed: bool) -> None:
    assert host_allowed(host, ("*.example.com", "registry.npmjs.org")) is allowed


def test_proxy_requests_are_parsed() -> None:
    assert parse_head(b"CONNECT api.example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n") == (
        "CONNECT",
        "api.example.com",
        443,
        b"",
    )
    method, host, port, head = parse_head(  # type: ignore[misc]
        b"GET http://example.com:8080/a?b=1 HTTP/1.1\r\nHost: example.com\r\n\r\n"
    )
    assert (method, host, port) == ("GET", "example.com", 8080)
    assert head.startswith(b"GET /a?b=1 HTTP/1.1\r\nHost: example.com")
    assert parse_head(b"GET http://example.com HTTP/1.1\r\n\r\n")[3].startswith(b"GET / HTTP/1.1")  # type: ignore[index]
    assert parse_head(b"CONNECT [::1]:22 HTTP/1.1\r\n\r\n")[1:3] == ("::1", 22)  # type: ignore[index]
    for bad in (
        b"GET /relative HTTP/1.1\r\n\r\n",
        b"CONNECT host:x HTTP/1.1\r\n\r\n",
        b"junk\r\n\r\n",
    ):
        assert parse_head(bad) is None


def test_agents_file_entries() -> None:
    spec = {"sandbox": {"read": ["~/.codex"], "write": ["/srv/cache"]}, "network": ["*.openai.com"]}
    parsed = parse_agent("codex", spec)
    assert parsed.read == ("~/.codex",) and parsed.write == ("/srv/cache",)
    assert parsed.network == ("*.openai.com",)
    for bad in (
        {"sandbox": {"read": ["relative"]}},
        {"sandbox": {"write": ["~/../etc"]}},
        {"sandbox": {"exec": []}},
        {"network": "*.x.com"},
        {"network": ["http://x.com"]},
    ):
        with pytest.raises(SettingsError, match="agents.codex"):
            parse_agent("codex", bad)


def test_settings() -> None:
    base = {"AGENT_WORKSPACE_ROOT": "/tmp"}
    settings = load_settings(base, env_file=None)
    assert settings.agent_sandbox == "auto" and settings.agent_network == "open"
    assert settings.agent_memory_max == 4 * 1024**3 and settings.agent_pids_max == 1024
    assert settings.agent_cpu_max is None
    tuned = load_settings(
        {
            **base,
            "AGENT_MEMORY_MAX": "512M",
            "AGENT_CPU_MAX": "1.5",
            "AGENT_NETWORK_ALLOW": "a.com, *.b.org",
        },
        env_file=None,
    )
    assert tuned.agent_memory_max == 512 * 1024**2 and tuned.agent_cpu_max == 1.5
    assert tuned.agent_network_allow == ("a.com", "*.b.org")
    for name, value in (
        ("AGENT_SANDBOX", "maybe"),
        ("AGENT_NETWORK", "wifi"),
        ("AGENT_MEMORY_MAX", "lots"),
        ("AGENT_PIDS_MAX", "0"),
        ("AGENT_NETWORK_ALLOW", "http://a.com"),
    ):
        with pytest.raises(SettingsError, match=name):
            load_settings({**base, name: value}, env_file=None)


def test_a_policy_never_shows_the_root_the_data_or_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from server.sandbox import AgentSandbox, SandboxHost

    root, data, home = tmp_path / "ws", tmp_path / "data", tmp_path / "home"
    for path in (root / "repo", data, home / "tools" / "bin"):
        path.mkdir(parents=True)
    (home / "tools" / "bin" / "agent").write_text("")
    monkeypatch.setenv("HOME", str(home))
    settings = load_settings(
        {
            "AGENT_WORKSPACE_ROOT": str(root),
            "DATABASE_URL": f"sqlite+aiosqlite:///{data / 'db.sqlite'}",
        },
        env_file=None,
    )
    host = SandboxHost(settings, {"a": AgentSandbox(read=("~/.config/a",), write=("/srv/x",))})
    host.enabled = True
    command = [str(home / "tools" / "bin" / "agent"), str(root / "repo"), str(data / "db.sqlite")]
    policy = host.policy("a", root / "repo", [command], {})
    assert policy is not None
    shown = [*policy.read, *policy.write]
    assert home / "tools" in shown  # the agent's installation, inside the home: fine
    for path in shown:
        for hidden in (root, data):  # never inside, never around
            assert not (path.is_relative_to(hidden) or hidden.is_relative_to(path)), path
        assert not home.is_relative_to(path), path  # never the home itself, nor "/"
    assert policy.home == data / "agent-homes" / "a"
    assert policy.mounts == ((home / ".config" / "a", policy.home / ".config" / "a", False),)
    assert Path("/srv/x") in policy.write


def test_the_hosts_secrets_are_masked_last() -> None:
    """Bound after every addition, so a ``read`` of /etc cannot show them again."""
    secrets = (("/etc/shadow", False), ("/etc/ssl/private", True))
    policy = SandboxPolicy(WS, HOME, read=(Path("/etc"),))
    argv = bwrap_argv(policy, ["a"], layout=LAYOUT, secrets=secrets)
    found = binds(argv)
    assert found[-1] == ("--ro-bind", "/dev/null", "/etc/shadow")
    assert found.index(("--ro-bind-try", "/etc", "/etc")) < len(found) - 1
    tmpfs = argv.index("/etc/ssl/private") - 1
    assert argv[tmpfs] == "--tmpfs" and argv[tmpfs + 2 : tmpfs + 4] == [
        "--remount-ro",
        "/etc/ssl/private",
    ]
    assert tmpfs > argv.index("/dev/null")


def test_host_secrets_are_the_present_ones() -> None:
    found = dict(host_secrets())
    assert all(path.startswith("/etc/") for path in found)
    assert not any(path.endswith(".pub") for path in found)  # public keys stay readable
    assert ("/etc/shadow" in found) is Path("/etc/shadow").is_file()
