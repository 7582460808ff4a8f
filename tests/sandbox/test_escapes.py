"""The escape catalogue (API.md "Agent sandbox"): from inside a real agent process that a
real server (``agent-sessions serve``) started, each escape is tried by the agent's own
shell (``shell_agent.py`` runs what the prompt says). With ``AGENT_SANDBOX=on`` each one
fails; with ``off`` the same command succeeds, so every test can fail."""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_bridge.sandbox import PROXY_PORT
from tests.conftest import LiveServer, make_git_repo, settings_env, start_server, test_database_url
from tests.helpers import run_ended, wait_for_message

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(120),
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
]

AGENT = Path(__file__).with_name("shell_agent.py")
SECRET = "tok-" + uuid.uuid4().hex  # the server's API_TOKEN: never to be found by an agent
PY = shlex.quote(sys.executable)
MEMORY_MAX = 256 * 1024 * 1024
PIDS_MAX = 64


@dataclass
class Node:
    server: LiveServer
    client: httpx.Client
    root: Path  # the test's folder: the workspace root and the database are inside
    repo_id: str

    def session(self, **body: Any) -> str:
        response = self.client.post(
            "/api/sessions", json={"repoId": self.repo_id, "agentId": "shell", **body}
        )
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    def run(self, session_id: str, command: str) -> tuple[int | None, str, dict[str, Any]]:
        """(exit code, output, run end) of ``command`` run by the agent itself."""
        response = self.client.post(f"/api/sessions/{session_id}/prompt", json={"text": command})
        assert response.status_code == 202, response.text
        run_id = response.json()["runId"]
        end = wait_for_message(self.client, session_id, run_ended(run_id), timeout=90)  # type: ignore[arg-type]
        texts = self.client.get(
            f"/api/sessions/{session_id}/messages", params={"limit": 5000}
        ).json()["messages"]
        text = "".join(
            m["content"]["text"]
            for m in texts
            if m["runId"] == run_id
            and m["content"]["type"] == "text"
            and m["role"] == "agent"
            and not m["content"]["partial"]
        )
        head, _, output = text.partition("\n")
        code = int(head[3:]) if head.startswith("rc=") else None
        return code, output, end["content"]

    def attempt(self, command: str, **body: Any) -> bool:
        """Whether ``command`` succeeded (exit code 0) in a fresh session's agent."""
        sid = self.session(**body)
        try:
            code, output, _ = self.run(sid, command)
        finally:
            self.client.delete(f"/api/sessions/{sid}")
        print(f"{command!r} -> {code}: {output[:300]}")
        return code == 0


def _node(tmp: Path, mode: str, network: str, port: int | None = None) -> Iterator[Node]:
    workspace = tmp / "workspace"
    make_git_repo(workspace / "demo")
    make_git_repo(workspace / "other", {"SECRET.md": "another repository's secret\n"})
    (tmp / "beside.txt").write_text("beside the workspace root\n")
    agents = tmp / "agents.toml"
    agents.write_text(f'[agents.shell]\ncommand = "{sys.executable} {AGENT}"\n')
    env = settings_env(
        tmp,
        workspace,
        AGENTS_FILE=str(agents),
        AGENT_SANDBOX=mode,
        AGENT_NETWORK=network,
        AGENT_NETWORK_ALLOW="localhost",
        AGENT_MEMORY_MAX=str(MEMORY_MAX),
        AGENT_PIDS_MAX=str(PIDS_MAX),
        API_TOKEN=SECRET,
        MAX_CONCURRENT_SESSIONS=20,
    )
    server = start_server(env, tmp / "server.log", port=port)
    client = httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {SECRET}"}, timeout=30
    )
    try:
        repos = client.get("/api/repos").json()["repos"]
        repo_id = next(r["id"] for r in repos if r["name"] == "demo")
        yield Node(server, client, tmp, repo_id)
    finally:
        client.close()
        server.stop()


@pytest.fixture(scope="module", params=["on", "off"])
def node(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Node]:
    """One server per mode; with the sandbox on its agents have no network (loopback only)."""
    mode = str(request.param)
    yield from _node(tmp_path_factory.mktemp(f"escape-{mode}"), mode, "none")


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    yield from _node(tmp_path_factory.mktemp("escape-proxy"), "on", "proxy")


def sandboxed(node: Node) -> bool:
    return bool(node.client.get("/readyz").json()["sandbox"]["enabled"])


def check(node: Node, command: str, landed: Path | None = None, **body: Any) -> None:
    """The escape fails inside the sandbox and succeeds without it (a write: ``landed``
    is on the host's disk afterwards; inside the sandbox it may land in a private tmpfs).
    ``body``: more of the session's create request."""
    succeeded = node.attempt(command, **body)
    if landed is not None:
        succeeded = succeeded and landed.exists()
    if sandboxed(node):
        assert not succeeded, f"escaped the sandbox: {command}"
    else:
        assert succeeded, (
            f"without a sandbox this should work, or the test proves nothing: {command}"
        )


def test_the_modes_are_what_they_say(node: Node) -> None:
    mode = node.server.env["AGENT_SANDBOX"]
    assert sandboxed(node) is (mode == "on")
    sid = node.session()
    view = node.client.get(f"/api/sessions/{sid}").json()["sandbox"]
    assert view == (
        {"enabled": True, "network": "none"}
        if mode == "on"
        else {"enabled": False, "network": "open"}
    )
    node.client.delete(f"/api/sessions/{sid}")


def test_read_a_file_beside_the_workspace_root(node: Node) -> None:
    check(node, f"cat {node.root / 'beside.txt'}")


def test_read_the_database_file(node: Node) -> None:
    database = test_database_url(node.root).split("///", 1)[1]
    check(node, f"head -c 16 {database} | grep -q 'SQLite format'")


def test_a_terminal_is_walled_in_too(node: Node) -> None:
    """ACP terminals the agent asks the server for run in a wall of their own."""
    check(node, f"!term cat {node.root / 'beside.txt'}")
    check(node, f"!term cat /proc/{node.server.process.pid}/environ")


def test_read_another_repository(node: Node) -> None:
    check(node, f"cat {node.root / 'workspace' / 'other' / 'SECRET.md'}")


def test_read_the_servers_environment(node: Node) -> None:
    check(node, f"cat /proc/{node.server.process.pid}/environ | tr '\\0' '\\n' | grep -q API_TOKEN")


def test_see_the_server_in_proc(node: Node) -> None:
    check(node, f"grep -q server.cli /proc/{node.server.process.pid}/cmdline")


def test_see_another_agent_in_proc(node: Node) -> None:
    other = node.session()  # its agent is alive while the probe runs
    try:
        check(node, f"grep -qs AGENT_SESSIONS_SESSION={other} /proc/[0-9]*/environ")
    finally:
        node.client.delete(f"/api/sessions/{other}")


def test_find_a_secret_in_the_environment(node: Node) -> None:
    check(node, f"env | grep -q {SECRET} || grep -qs {SECRET} /proc/[0-9]*/environ")


def test_write_outside_the_workspace(node: Node) -> None:
    target = node.root / f"written-{uuid.uuid4().hex}"
    check(node, f"echo escaped > {target}", target)


@pytest.mark.parametrize(
    "secret", ["/etc/shadow", "/etc/gshadow", "/etc/ssh/ssh_host_ed25519_key", "/etc/ssl/private"]
)
def test_read_a_secret_of_the_host(node: Node, secret: str) -> None:
    """The read-only /etc shows no password hash, SSH host key or TLS private key, even
    to a root server's agent (the files' owner inside its user namespace)."""
    path = Path(secret)
    if not os.access(path, os.R_OK) or (path.is_dir() and not any(path.iterdir())):
        pytest.skip(f"{secret} is not here, this user cannot read it either, or it is empty")
    if path.is_dir():
        check(node, f'test -r {secret} && test -x {secret} && test -n "$(ls -A {secret})"')
    else:
        check(node, f"grep -q . {secret}")


@pytest.mark.parametrize("folder", ["/usr", "/etc"])
def test_write_into_the_system(node: Node, folder: str) -> None:
    target = Path(folder, f".agent-escape-{uuid.uuid4().hex}")
    try:
        check(node, f"echo escaped > {target}", target)
    finally:
        target.unlink(missing_ok=True)


def test_reach_a_loopback_port_without_network(node: Node) -> None:
    port = node.server.port  # the server itself listens on loopback
    check(node, f"{PY} -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 3)'")


PICK = {"name": "pick", "inputSchema": {"type": "object"}}


def test_reach_the_server_through_the_client_tools_relay(node: Node) -> None:
    """A session with client tools has a forwarder at the server's own port inside its
    sandbox (its MCP server's URL works unchanged): it carries the session's MCP path
    and nothing else, so the rest of the server stays out of reach."""
    port = node.server.port
    url = f"http://127.0.0.1:{port}/healthz"
    code = f"import urllib.request; urllib.request.urlopen({url!r}, timeout=5)"
    check(node, f"{PY} -c {shlex.quote(code)}", clientTools=[PICK])
    if sandboxed(node):
        assert "mcp_relay_refused" in node.server.log()


def test_fork_past_the_process_limit(node: Node) -> None:
    code = (
        "import os, time\n"
        f"for _ in range({PIDS_MAX + 20}):\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(2); os._exit(0)\n"
    )
    check(node, f"{PY} -c {shlex.quote(code)}")


def test_allocate_past_the_memory_limit(node: Node) -> None:
    size = 2 * MEMORY_MAX
    code = f"b = bytearray({size})\nfor i in range(0, {size}, 4096): b[i] = 1\n"
    check(node, f"{PY} -c {shlex.quote(code)}")


CONNECT = """
import os, socket, sys
host, port = sys.argv[1], int(sys.argv[2])
try:
    socket.create_connection((host, port), 3).close()
    sys.exit(0)
except OSError:
    pass
proxy = os.environ.get("HTTPS_PROXY", "")
if not proxy:
    sys.exit(1)
p = socket.create_connection(("127.0.0.1", int(proxy.rsplit(":", 1)[1])), 3)
p.sendall(f"CONNECT {host}:{port} HTTP/1.1\\r\\nHost: {host}\\r\\n\\r\\n".encode())
head = p.recv(4096).decode()
print(head.splitlines()[0])
if " 200 " not in head:
    sys.exit(1)
p.sendall(b"GET /healthz HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n")
print(p.recv(4096).decode().splitlines()[0])
"""


def test_reach_a_host_not_allowed_through_the_proxy(proxied: Node, node: Node) -> None:
    """Through the proxy only AGENT_NETWORK_ALLOW (localhost) gets out: 127.0.0.1 is
    refused, logged and counted; without a sandbox it is reached directly."""
    target = proxied if sandboxed(node) else node
    port = target.server.port
    check(target, f"{PY} -c {shlex.quote(CONNECT)} 127.0.0.1 {port}")
    if target is proxied:
        deadline = time.monotonic() + 10
        while "egress_refused" not in proxied.server.log() and time.monotonic() < deadline:
            time.sleep(0.05)  # the log line is written by another process
        assert "egress_refused" in proxied.server.log()
        metrics = proxied.client.get("/metrics").text
        assert 'agent_sessions_egress_refused_total{agent="shell"}' in metrics


def test_an_allowed_host_gets_through_the_proxy(proxied: Node) -> None:
    port = proxied.server.port
    assert proxied.attempt(f"{PY} -c {shlex.quote(CONNECT)} localhost {port}")


THROUGH_BOTH = """
import os, socket, sys, urllib.error, urllib.request
proxy = os.environ["HTTPS_PROXY"]
print("proxy", proxy)
p = socket.create_connection(("127.0.0.1", int(proxy.rsplit(":", 1)[1])), 3)
p.sendall(b"CONNECT localhost:%d HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n" % int(sys.argv[1]))
print("connect", p.recv(4096).decode().splitlines()[0])
p.sendall(b"GET /healthz HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n")
print("through the proxy", p.recv(4096).decode().splitlines()[0])
try:  # NO_PROXY: straight to the loopback listener at the server's own port
    urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/healthz", timeout=5)
    print("relay open")
except (urllib.error.URLError, OSError) as exc:
    print("relay", exc)
"""


@pytest.fixture
def on_the_proxys_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    """A sandboxed server under ``proxy`` whose own PORT is the proxy's (3128)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(("127.0.0.1", PROXY_PORT))
        except OSError:
            pytest.skip(f"port {PROXY_PORT} is taken on this machine")
    yield from _node(tmp_path_factory.mktemp("escape-3128"), "on", "proxy", port=PROXY_PORT)


def test_a_server_on_the_proxys_port_keeps_client_tools_and_proxy(
    on_the_proxys_port: Node,
) -> None:
    """The egress proxy listens on 3128 inside the sandbox. A server whose own PORT is
    3128 has it on 3129 instead: the client tools' relay keeps the server's port (the
    agent's MCP URL works unchanged), and the agent's traffic still goes through the
    proxy. Before, the relay was left out and the client tools could not be reached."""
    node = on_the_proxys_port
    if not sandboxed(node):
        pytest.skip("the sandbox does not work here")
    sid = node.session(clientTools=[PICK])
    code, output, _ = node.run(sid, f"{PY} -c {shlex.quote(THROUGH_BOTH)} {PROXY_PORT}")
    print(output)
    assert code == 0, output
    assert f"proxy http://127.0.0.1:{PROXY_PORT + 1}" in output
    assert "connect HTTP/1.1 200" in output
    assert "through the proxy HTTP/1.1 200" in output
    assert "relay open" not in output  # the relay carries the MCP path only
    assert "mcp_relay_refused" in node.server.log()  # so it was the relay that answered


def test_an_agent_killed_for_memory_ends_its_session_in_error(node: Node) -> None:
    if not sandboxed(node):
        pytest.skip("limits apply to sandboxed agents")
    sid = node.session()
    _, _, end = node.run(sid, f"!alloc {2 * MEMORY_MAX // (1024 * 1024)}")
    assert end["status"] == "failed", end
    status = wait_for_message(
        node.client,  # type: ignore[arg-type]
        sid,
        lambda m: m["content"]["type"] == "status" and m["content"]["status"] == "error",
    )["content"]
    assert status["reason"] == "agent_out_of_memory", status
    assert node.client.get(f"/api/sessions/{sid}").json()["status"] == "error"
