"""AcpClient over a real agent process: `connect_agent` + `AcpClient` against the demo
agent, and against a small scripted agent that sends the client exactly the requests a
test names (the demo agent only reads files it picks itself) and records the answers it
gets on the wire."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_bridge import (
    AcpClient,
    AgentConnection,
    ProcessSpec,
    RpcError,
    Workspace,
    agent_environment,
    connect_agent,
    jsonrpc,
)
from agent_bridge.demo_agent import command as demo_command
from tests.conftest import make_git_repo

pytestmark = pytest.mark.anyio

WAIT = 20
SECRET = "TOP-SECRET outside"

# An agent that answers initialize and session/new, and on session/prompt sends the
# client each request of argv[1] in turn, writing every line it receives to argv[2].
SCRIPTED_AGENT = r"""
import json, sys
requests, log_path = json.loads(sys.argv[1]), sys.argv[2]
log = open(log_path, "a")
def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
def receive():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    message = json.loads(line)
    log.write(json.dumps(message) + "\n")
    log.flush()
    return message
while True:
    message = receive()
    method = message.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": message["id"],
              "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"sessionId": "sess-1"}})
    elif method == "session/prompt":
        for index, (name, params) in enumerate(requests):
            send({"jsonrpc": "2.0", "id": 1000 + index, "method": name, "params": params})
            receive()
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"stopReason": "end_turn"}})
"""


class Recorder:
    """ClientCallbacks that remember everything and answer permissions with one option."""

    def __init__(self, option: str = "allow") -> None:
        self.option = option
        self.updates: list[dict[str, Any]] = []
        self.raws: list[dict[str, Any]] = []
        self.permissions: list[dict[str, Any]] = []

    async def on_session_update(
        self, update: dict[str, Any], raw: dict[str, Any], *, replayed: bool
    ) -> None:
        assert not replayed
        self.updates.append(update)
        self.raws.append(raw)

    async def on_permission_request(
        self, params: dict[str, Any], raw: dict[str, Any]
    ) -> Awaitable[dict[str, Any]]:
        self.permissions.append(params)

        async def outcome() -> dict[str, Any]:
            return {"outcome": "selected", "optionId": self.option}

        return outcome()

    def kinds(self) -> list[str]:
        return [u["sessionUpdate"] for u in self.updates]

    def text(self) -> str:
        return "".join(
            u["content"]["text"]
            for u in self.updates
            if u["sessionUpdate"] == "agent_message_chunk"
        )

    def tool(self, call_id: str) -> list[dict[str, Any]]:
        return [u for u in self.updates if u.get("toolCallId") == call_id]


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """A repository with escapes in it, and the outside world they point at."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    repo = make_git_repo(tmp_path / "workspace" / "repo")
    (repo / "link-out").symlink_to(outside / "secret.txt")
    (repo / "link-dir").symlink_to(outside)
    return {"repo": repo.resolve(), "outside": outside.resolve()}


def snapshot(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): p.read_text()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


@asynccontextmanager
async def agent(
    repo: Path, callbacks: Recorder, argv: list[str]
) -> AsyncIterator[tuple[AcpClient, AgentConnection]]:
    client = AcpClient(callbacks, Workspace(repo), request_timeout=WAIT)
    spec = ProcessSpec(
        argv=argv, cwd=repo, env=agent_environment(os.environ, {}, "test-acp-client")
    )
    async with connect_agent(
        spec,
        client,
        max_line_bytes=1 << 20,
        stop_grace=1,
        polite_stop=lambda _conn: client.close_session(),
    ) as conn:
        client.bind(conn)
        yield client, conn


def scripted(requests: list[tuple[str, dict[str, Any]]], log: Path) -> list[str]:
    return [sys.executable, "-c", SCRIPTED_AGENT, json.dumps(requests), str(log)]


def received(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


async def run_scripted(
    tree: dict[str, Path], tmp_path: Path, requests: list[tuple[str, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Play ``requests`` against the client; every answer the agent got, in order."""
    log = tmp_path / "agent-log.jsonl"
    async with agent(tree["repo"], Recorder(), scripted(requests, log)) as (client, _conn):
        with anyio.fail_after(WAIT):
            await client.initialize()
            await client.new_session()
            assert await client.prompt([{"type": "text", "text": "go"}]) == {
                "stopReason": "end_turn"
            }
    answers = [
        m
        for m in received(log)
        if "method" not in m and isinstance(m.get("id"), int) and m["id"] >= 1000
    ]
    assert [a["id"] for a in answers] == list(range(1000, 1000 + len(requests)))
    return answers


# -- what the client says ----------------------------------------------------------------


async def test_initialize_advertises_fs_and_session_new_names_the_repository(
    tree: dict[str, Path], tmp_path: Path
) -> None:
    log = tmp_path / "agent-log.jsonl"
    async with agent(tree["repo"], Recorder(), scripted([], log)) as (client, conn):
        with anyio.fail_after(WAIT):
            result = await client.initialize()
            assert result["protocolVersion"] == 1
            assert await client.new_session() == "sess-1"
        assert Path(f"/proc/{conn.process.pid}/cwd").resolve() == tree["repo"]
    initialize, new = received(log)[:2]
    assert initialize["method"] == "initialize"
    assert initialize["params"]["protocolVersion"] == 1
    assert initialize["params"]["clientCapabilities"]["fs"] == {
        "readTextFile": True,
        "writeTextFile": True,
    }
    assert initialize["params"]["clientInfo"]["name"] == "agent-sessions"
    assert new["method"] == "session/new"
    assert new["params"] == {"cwd": str(tree["repo"]), "mcpServers": []}
    assert conn.exit_code == 0  # stopped politely: stdin closed, the agent exited by itself


# -- file access is confined to the repository --------------------------------------------


ESCAPING_READS = [
    "../outside/secret.txt",
    "{repo}/../../outside/secret.txt",
    "/etc/passwd",
    "{outside}/secret.txt",
    "{repo}/link-out",
    "{repo}/link-dir/secret.txt",
    "{repo}/README.md\x00.txt",
]
ESCAPING_WRITES = [
    "../outside/new.txt",
    "{outside}/secret.txt",
    "{outside}/new.txt",
    "{repo}/link-out",
    "{repo}/link-dir/new.txt",
    "{repo}/../../outside/new.txt",
]


async def test_file_access_outside_the_repository_is_refused_on_the_wire(
    tree: dict[str, Path], tmp_path: Path
) -> None:
    before = snapshot(tree["outside"])
    fill = {"repo": tree["repo"], "outside": tree["outside"]}
    requests: list[tuple[str, dict[str, Any]]] = (
        [
            ("fs/read_text_file", {"sessionId": "sess-1", "path": p.format(**fill)})
            for p in ESCAPING_READS
        ]
        + [
            (
                "fs/write_text_file",
                {"sessionId": "sess-1", "path": p.format(**fill), "content": "pwned"},
            )
            for p in ESCAPING_WRITES
        ]
        + [
            ("fs/read_text_file", {"sessionId": "sess-1", "path": f"{tree['repo']}/README.md"}),
            (
                "fs/write_text_file",
                {"sessionId": "sess-1", "path": f"{tree['repo']}/sub/new.txt", "content": "fine"},
            ),
        ]
    )
    answers = await run_scripted(tree, tmp_path, requests)
    refused, allowed = answers[:-2], answers[-2:]
    for request, answer in zip(requests, refused, strict=False):
        assert "result" not in answer, (request, answer)
        assert answer["error"]["code"] == jsonrpc.INVALID_PARAMS, (request, answer)
        assert SECRET not in json.dumps(answer)
        assert "Traceback" not in json.dumps(answer)
    # Nothing outside changed, nothing was created there.
    assert snapshot(tree["outside"]) == before
    # The same client reads and writes inside the repository.
    assert allowed[0]["result"]["content"].startswith("# Demo")
    assert allowed[1]["result"] == {}
    assert (tree["repo"] / "sub" / "new.txt").read_text() == "fine"


async def test_unknown_methods_and_foreign_sessions_are_errors(
    tree: dict[str, Path], tmp_path: Path
) -> None:
    answers = await run_scripted(
        tree,
        tmp_path,
        [
            ("x/unknown", {"sessionId": "sess-1"}),
            ("terminal/create", {"sessionId": "sess-1", "command": "true"}),  # no terminals offered
            ("fs/read_text_file", {"sessionId": "another", "path": "README.md"}),
            ("fs/read_text_file", {"sessionId": "sess-1", "path": 42}),
            ("fs/read_text_file", {"sessionId": "sess-1", "path": f"{tree['repo']}/missing.txt"}),
        ],
    )
    codes = [a.get("error", {}).get("code") for a in answers]
    assert codes == [
        jsonrpc.METHOD_NOT_FOUND,
        jsonrpc.METHOD_NOT_FOUND,
        jsonrpc.INVALID_PARAMS,
        jsonrpc.INVALID_PARAMS,
        -32002,
    ]
    assert answers[0]["error"]["message"] == "Method not found"


async def test_on_request_refuses_escapes_directly(tree: dict[str, Path]) -> None:
    """The same rules without a process: ``on_request`` raises (or its answer raises)."""
    client = AcpClient(Recorder(), Workspace(tree["repo"]))
    for path in ESCAPING_READS:
        request = jsonrpc.Request(7, "fs/read_text_file", {"path": path.format(**tree)}, {})
        with pytest.raises(RpcError) as raised:
            await (await client.on_request(request))
        assert raised.value.code == jsonrpc.INVALID_PARAMS
    with pytest.raises(RpcError) as raised:
        await client.on_request(jsonrpc.Request("x", "nope/nope", {}, {}))
    assert raised.value.code == jsonrpc.METHOD_NOT_FOUND


# -- the demo agent ----------------------------------------------------------------------------


async def test_a_turn_with_the_demo_agent(tree: dict[str, Path]) -> None:
    recorder = Recorder()
    async with agent(tree["repo"], recorder, demo_command()) as (client, conn):
        with anyio.fail_after(WAIT):
            result = await client.initialize()
            assert result["protocolVersion"] == 1
            assert result["agentInfo"]["name"] == "demo-agent"
            session_id = await client.new_session()
            assert client.session_id == session_id
            assert (await client.prompt([{"type": "text", "text": "hello"}]))[
                "stopReason"
            ] == "end_turn"
        assert Path(f"/proc/{conn.process.pid}/cwd").resolve() == tree["repo"]
    kinds = recorder.kinds()
    assert kinds[0] == "available_commands_update"  # the demo's, before session/new's answer
    assert kinds[1:4] == ["agent_thought_chunk", "agent_thought_chunk", "plan"]
    assert kinds[-1] == "usage_update"
    # It read README.md of its session cwd through our fs/read_text_file.
    read = recorder.tool("call_1")
    assert read[0]["rawInput"] == {"path": str(tree["repo"] / "README.md")}
    assert [u["status"] for u in read if "status" in u] == ["pending", "in_progress", "completed"]
    assert read[-1]["rawOutput"] == {
        "bytes": len((tree["repo"] / "README.md").read_bytes()),
        "lines": 3,
    }
    assert "You said: hello" in recorder.text()
    # Updates arrive in order with their raw frames.
    assert all(
        raw["method"] == "session/update" and raw["params"]["update"] == update
        for raw, update in zip(recorder.raws, recorder.updates, strict=True)
    )
    assert conn.exit_code == 0


@pytest.mark.parametrize(("option", "written"), [("allow", True), ("reject", False)])
async def test_the_demo_agent_writes_only_after_permission(
    tree: dict[str, Path], option: str, written: bool
) -> None:
    recorder = Recorder(option)
    async with agent(tree["repo"], recorder, demo_command()) as (client, _conn):
        with anyio.fail_after(WAIT):
            await client.initialize()
            await client.new_session()
            await client.prompt([{"type": "text", "text": "write notes.txt hello there"}])
    (asked,) = recorder.permissions
    assert asked["toolCall"]["toolCallId"] == "call_2"
    assert {o["optionId"] for o in asked["options"]} == {"allow", "allow-always", "reject"}
    assert (tree["repo"] / "notes.txt").exists() is written
    if written:
        assert (tree["repo"] / "notes.txt").read_text() == "hello there"
    final = [u for u in recorder.tool("call_2") if "status" in u][-1]
    assert final["status"] == ("completed" if written else "failed")


async def test_a_crashing_agent_fails_the_pending_request(tree: dict[str, Path]) -> None:
    recorder = Recorder()
    async with agent(tree["repo"], recorder, demo_command()) as (client, conn):
        with anyio.fail_after(WAIT):
            await client.initialize()
            await client.new_session()
            with pytest.raises(Exception) as raised:
                await client.prompt([{"type": "text", "text": "crash"}])
            await conn.exited.wait()
    assert type(raised.value).__name__ == "AgentExited"
    assert conn.exit_code == 3
    assert "crashing on purpose" in conn.stderr_tail


async def test_the_demo_agent_honours_a_cancel_right_behind_its_prompt(
    tree: dict[str, Path],
) -> None:
    """Raw pipes: the prompt and its cancel reach the agent in one write."""
    process = await anyio.open_process(demo_command(), cwd=tree["repo"])
    assert process.stdin is not None and process.stdout is not None
    lines = process.stdout

    async def call(message: dict[str, Any]) -> dict[str, Any]:
        await process.stdin.send((json.dumps(message) + "\n").encode())  # type: ignore[union-attr]
        return await answer(message["id"])

    buffer = bytearray()

    async def answer(msg_id: int) -> dict[str, Any]:
        while True:
            while b"\n" in buffer:
                line, _, rest = bytes(buffer).partition(b"\n")
                buffer[:] = rest
                message = json.loads(line)
                if message.get("id") == msg_id and "method" not in message:
                    return message  # type: ignore[no-any-return]
            buffer.extend(await lines.receive())

    try:
        with anyio.fail_after(WAIT):
            await call(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"protocolVersion": 1},
                }
            )
            new = await call(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "session/new",
                    "params": {"cwd": str(tree["repo"]), "mcpServers": []},
                }
            )
            session_id = new["result"]["sessionId"]
            prompt = {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "session/prompt",
                "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "slow 5"}]},
            }
            cancel = {
                "jsonrpc": "2.0",
                "method": "session/cancel",
                "params": {"sessionId": session_id},
            }
            await process.stdin.send(
                (json.dumps(prompt) + "\n" + json.dumps(cancel) + "\n").encode()
            )
            result = await answer(3)
    finally:
        await process.stdin.aclose()
        with anyio.fail_after(WAIT):
            await process.wait()
    assert result["result"]["stopReason"] == "cancelled"
