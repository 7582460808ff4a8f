"""The demo agent as a real subprocess, driven by a raw JSON-lines client.

The client here is deliberately tiny and independent of agent_bridge: it writes
requests, answers the agent's fs/* and permission requests by a per-test policy, and
records every line the agent writes. Waits are event-driven (a condition notified per
line) with timeouts.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

import agent_bridge.demo_agent as demo_agent
from agent_bridge.demo_agent.flood import parse_stamp

pytestmark = pytest.mark.anyio

ROOT = Path(demo_agent.__file__).resolve().parents[2]
SCHEMA_PATH = Path(
    os.environ.get("ACP_SCHEMA", ROOT.parent / "shared" / "acp-schema" / "schema-v1.json")
)
README = "# Demo workspace\nsecond line\nthird line\n"
TIMEOUT = 10.0

Message = dict[str, Any]


# -- a cheap structural check against the schema (no jsonschema needed) ---------------


def _load_schema() -> dict[str, Any] | None:
    try:
        return json.loads(SCHEMA_PATH.read_text())  # type: ignore[no-any-return]
    except OSError:
        return None


SCHEMA = _load_schema()


def _resolve(defs: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    return defs[ref.rsplit("/", 1)[1]] if isinstance(ref, str) else node


def _required(defs: dict[str, Any], node: dict[str, Any]) -> set[str]:
    node = _resolve(defs, node)
    found = set(node.get("required", ()))
    for part in node.get("allOf", ()):
        found |= _required(defs, part)
    return found


def _consts(defs: dict[str, Any], name: str) -> set[str]:
    return {variant["const"] for variant in defs[name]["oneOf"]}


class LightSchema:
    """sessionUpdate kinds, their required fields, and the enums a turn uses."""

    def __init__(self, schema: dict[str, Any]) -> None:
        defs = schema["$defs"]
        self.updates = {
            variant["properties"]["sessionUpdate"]["const"]: _required(defs, variant)
            for variant in defs["SessionUpdate"]["oneOf"]
        }
        self.tool_status = _consts(defs, "ToolCallStatus")
        self.tool_kind = _consts(defs, "ToolKind")
        self.plan_status = _consts(defs, "PlanEntryStatus")
        self.priority = _consts(defs, "PlanEntryPriority")
        self.stop_reasons = _consts(defs, "StopReason")

    def problems(self, update: Message) -> list[str]:
        kind = update.get("sessionUpdate")
        if kind not in self.updates:
            return [f"unknown sessionUpdate {kind!r}"]
        found = [f"{kind} lacks {field}" for field in self.updates[kind] if field not in update]
        if "status" in update and update["status"] not in self.tool_status:
            found.append(f"bad tool status {update['status']!r}")
        if "kind" in update and update["kind"] not in self.tool_kind:
            found.append(f"bad tool kind {update['kind']!r}")
        for entry in update.get("entries", ()):
            status, priority = entry.get("status"), entry.get("priority")
            if status not in self.plan_status or priority not in self.priority:
                found.append(f"bad plan entry {entry!r}")
        return found


LIGHT = LightSchema(SCHEMA) if SCHEMA is not None else None


# -- the raw client -----------------------------------------------------------------


class Agent:
    """One demo agent process and what it wrote."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.messages: list[Message] = []  # every JSON object on stdout, in order
        self.noise: list[bytes] = []  # stdout lines that are not JSON objects
        self.stderr = bytearray()
        self.partial = 0  # length of the unfinished stdout line
        self.responses: dict[Any, int] = {}  # our request id -> index in messages
        self.sent: dict[int, str] = {}  # our request id -> method
        self.held: list[Message] = []  # agent requests the policy did not answer
        self.violations: list[str] = []
        self.policy: dict[str, str] = {"read": "disk", "write": "disk", "permission": "allow"}
        self.elicitation_answer: Message = {"action": "cancel"}  # what elicitation/create gets
        self._ids = iter(range(1, 1 << 30))  # overlaps the agent's ids on purpose
        self._changed = asyncio.Condition()

    # reading

    async def read_stdout(self) -> None:
        assert self.proc.stdout is not None
        pending = bytearray()
        while chunk := await self.proc.stdout.read(1 << 16):
            pending += chunk
            *lines, rest = pending.split(b"\n")
            pending = bytearray(rest)
            self.partial = len(pending)
            for line in lines:
                self._on_line(bytes(line))
            async with self._changed:
                self._changed.notify_all()

    async def read_stderr(self) -> None:
        assert self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(1 << 16):
            self.stderr += chunk
            async with self._changed:
                self._changed.notify_all()

    def _on_line(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            self.noise.append(line)
            return
        self.messages.append(message)
        if message.get("method") == "session/update" and LIGHT is not None:
            self.violations += LIGHT.problems(message["params"]["update"])
        if "method" in message and "id" in message:
            self._answer_request(message)
        elif "id" in message:
            self.responses[message["id"]] = len(self.messages) - 1

    def _answer_request(self, request: Message) -> None:
        method, params = request["method"], request["params"]
        if method == "fs/read_text_file":
            policy = self.policy["read"]
            if policy == "disk":
                self.reply(request, {"content": Path(params["path"]).read_text()})
            elif policy == "error":
                self.reply_error(request, -32002, "no such file (test)")
            else:
                self.held.append(request)
        elif method == "fs/write_text_file":
            if self.policy["write"] == "disk":
                Path(params["path"]).write_text(params["content"])
                self.reply(request, {})
            else:
                self.held.append(request)
        elif method == "session/request_permission":
            policy = self.policy["permission"]
            if policy == "hold":
                self.held.append(request)
            elif policy == "cancelled":
                self.reply(request, {"outcome": {"outcome": "cancelled"}})
            else:
                self.reply(request, {"outcome": {"outcome": "selected", "optionId": policy}})
        elif method == "elicitation/create":
            self.reply(request, self.elicitation_answer)
        else:
            self.reply_error(request, -32601, "Method not found")

    # writing

    def send(self, message: Message) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")

    def reply(self, request: Message, result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    def reply_error(self, request: Message, code: int, text: str) -> None:
        self.send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": code, "message": text}})

    def notify(self, method: str, params: Message) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def start_request(self, method: str, params: Message) -> int:
        msg_id = next(self._ids)
        self.sent[msg_id] = method
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    # waiting

    async def wait_for(self, predicate: Callable[[], object], timeout: float = TIMEOUT) -> None:
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(predicate), timeout)

    async def response(self, msg_id: int, timeout: float = TIMEOUT) -> Message:
        await self.wait_for(lambda: msg_id in self.responses, timeout)
        return self.messages[self.responses[msg_id]]

    async def call(self, method: str, params: Message, timeout: float = TIMEOUT) -> Message:
        return await self.response(self.start_request(method, params), timeout)

    async def result(self, method: str, params: Message) -> Any:
        answer = await self.call(method, params)
        assert "result" in answer, answer
        return answer["result"]

    async def exit_code(self, timeout: float = TIMEOUT) -> int:
        return await asyncio.wait_for(self.proc.wait(), timeout)

    # ACP helpers

    async def initialize(
        self, read: bool = True, write: bool = True, elicitation: bool = False
    ) -> Message:
        caps: Message = {"fs": {"readTextFile": read, "writeTextFile": write}, "terminal": False}
        if elicitation:
            caps["elicitation"] = {"form": {}, "url": {}}
        params = {
            "protocolVersion": 1,
            "clientCapabilities": caps,
            "clientInfo": {"name": "test", "version": "0"},
        }
        return await self.result("initialize", params)  # type: ignore[no-any-return]

    async def new_session(self, cwd: Path) -> str:
        result = await self.result("session/new", {"cwd": str(cwd), "mcpServers": []})
        return result["sessionId"]  # type: ignore[no-any-return]

    async def prompt(self, session_id: str, text: str) -> tuple[Message, list[Message]]:
        """Run one turn; returns the response and the turn's updates, in order."""
        start = len(self.messages)
        msg_id = self.start_request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        )
        answer = await self.response(msg_id)
        return answer, self.updates(session_id, start, self.responses[msg_id])

    def updates(self, session_id: str, start: int = 0, end: int | None = None) -> list[Message]:
        return [
            m["params"]["update"]
            for m in self.messages[start:end]
            if m.get("method") == "session/update" and m["params"]["sessionId"] == session_id
        ]

    def requests(self, method: str) -> list[Message]:
        return [m for m in self.messages if m.get("method") == method and "id" in m]

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        if not self.proc.stdin.is_closing():
            self.proc.stdin.close()

    def kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)


def _environment(extra: dict[str, str]) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("DEMO_AGENT_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


@contextlib.asynccontextmanager
async def spawn(cwd: Path, **env: str) -> AsyncIterator[Agent]:
    """The agent in its own process group; killed (group and all) at the end."""
    proc = await asyncio.create_subprocess_exec(
        *demo_agent.command(),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        env=_environment(env),
        start_new_session=True,
    )
    agent = Agent(proc)
    readers = [asyncio.ensure_future(reader()) for reader in (agent.read_stdout, agent.read_stderr)]
    try:
        yield agent
    finally:
        agent.close_stdin()
        agent.kill_group()  # also reaps grandchildren that hold the pipes open
        await asyncio.wait_for(proc.wait(), TIMEOUT)
        await asyncio.wait_for(asyncio.gather(*readers), TIMEOUT)
    assert agent.violations == []


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "README.md").write_text(README)
    (path / "a.txt").write_text("alpha\n")
    return path


async def start(workspace: Path, agent: Agent, **caps: bool) -> str:
    await agent.initialize(**caps)
    return await agent.new_session(workspace)


def kinds(updates: list[Message]) -> list[str]:
    return [u["sessionUpdate"] for u in updates]


def reply_text(updates: list[Message]) -> str:
    chunks = [u for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    return "".join(u["content"]["text"] for u in chunks)


def tool_statuses(updates: list[Message], tool_call_id: str) -> list[str]:
    return [
        u["status"]
        for u in updates
        if u["sessionUpdate"] in ("tool_call", "tool_call_update")
        and u["toolCallId"] == tool_call_id
        and "status" in u
    ]


def test_demo_agent_imports_only_the_standard_library() -> None:
    package = Path(demo_agent.__file__).parent
    outside = []
    for module in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            top = {name.split(".")[0] for name in names}
            outside += [f"{module.name}: {name}" for name in top - sys.stdlib_module_names]
    assert outside == []


# -- protocol basics ----------------------------------------------------------------


async def test_initialize_shape_and_plain_errors(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        result = await agent.initialize()
        assert result == {
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": False,
                "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": True, "sse": False},  # it calls client tools
            },
            "authMethods": [],
            "agentInfo": {"name": "demo-agent", "version": "1.0.0"},
        }
        agent.notify("made/up", {})  # unknown notifications are ignored
        assert (await agent.call("made/up", {}))["error"]["code"] == -32601
        assert (await agent.call("session/load", {}))["error"]["code"] == -32601  # not advertised
        bad_cwd = await agent.call("session/new", {"cwd": "relative/dir", "mcpServers": []})
        assert bad_cwd["error"]["code"] == -32602
        unknown = await agent.call("session/prompt", {"sessionId": "nope", "prompt": []})
        assert unknown["error"]["code"] == -32602
        assert agent.proc.stdin is not None
        agent.proc.stdin.write(b"{not json\n")
        await agent.wait_for(
            lambda: any(m.get("error", {}).get("code") == -32700 for m in agent.messages)
        )
        assert agent.noise == []


async def test_stdin_eof_exits_0_even_mid_turn(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        agent.start_request(
            "session/prompt",
            {"sessionId": session, "prompt": [{"type": "text", "text": "slow 100"}]},
        )
        await agent.wait_for(lambda: "chunk 1/100" in reply_text(agent.updates(session)))
        agent.close_stdin()
        assert await agent.exit_code() == 0
        assert agent.partial == 0  # nothing cut mid-line


# -- the default turn ---------------------------------------------------------------


async def test_default_turn_sequence_and_read_request(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        answer, updates = await agent.prompt(session, "hello there")
        assert answer["result"] == {"stopReason": "end_turn"}
        sequence = kinds(updates)
        assert sequence[:7] == [
            "agent_thought_chunk",
            "agent_thought_chunk",
            "plan",
            "tool_call",
            "tool_call_update",
            "tool_call_update",
            "plan",
        ]
        assert sequence[-1] == "usage_update"
        assert set(sequence[7:-1]) == {"agent_message_chunk"} and len(sequence[7:-1]) >= 3
        readme = str(workspace / "README.md")
        call = updates[3]
        assert call["toolCallId"] == "call_1" and call["title"] == "Read README.md"
        assert (call["kind"], call["status"]) == ("read", "pending")
        assert call["rawInput"] == {"path": readme} and call["locations"] == [{"path": readme}]
        assert updates[4]["status"] == "in_progress"
        done = updates[5]
        assert done["status"] == "completed"
        assert done["content"] == [{"type": "content", "content": {"type": "text", "text": README}}]
        assert done["rawOutput"] == {"bytes": len(README), "lines": 3}
        assert 2 <= len(updates[2]["entries"]) <= 3
        assert {e["status"] for e in updates[2]["entries"]} == {"pending"}
        assert {e["status"] for e in updates[6]["entries"]} == {"completed"}
        text = reply_text(updates)
        assert "You said: hello there" in text and "README.md has 3 lines." in text
        usage = updates[-1]
        assert usage["size"] == 200000 and isinstance(usage["used"], int)
        assert usage["cost"]["currency"] == "USD"
        # the read request: its path, and its place between in_progress and completed
        (read,) = agent.requests("fs/read_text_file")
        assert read["params"] == {"sessionId": session, "path": readme}
        order = [
            m.get("params", {}).get("update", {}).get("status") or m.get("method")
            for m in agent.messages
            if m.get("method")
        ]
        assert order.index("fs/read_text_file") == order.index("in_progress") + 1
        # the cost is cumulative over the session's turns
        _, again = await agent.prompt(session, "second")
        assert again[-1]["cost"]["amount"] > usage["cost"]["amount"]
        assert "You said: second" in reply_text(again)


async def test_read_error_fails_the_tool_call(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        agent.policy["read"] = "error"
        answer, updates = await agent.prompt(session, "read please")
        assert answer["result"]["stopReason"] == "end_turn"
        failed = [u for u in updates if u.get("status") == "failed"]
        assert failed == [
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "call_1",
                "status": "failed",
                "rawOutput": {"error": "no such file (test)"},
            }
        ]
        assert "could not read README.md" in reply_text(updates)


async def test_no_read_capability_means_no_read(workspace: Path) -> None:
    (workspace / "README.md").unlink()
    async with spawn(workspace) as agent:
        session = await start(workspace, agent, read=False)
        answer, updates = await agent.prompt(session, "hi")
        assert answer["result"]["stopReason"] == "end_turn"
        assert "tool_call" not in kinds(updates)
        assert agent.requests("fs/read_text_file") == []


async def test_reads_first_file_without_readme(workspace: Path) -> None:
    (workspace / "README.md").unlink()
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        _, updates = await agent.prompt(session, "hi")
        assert updates[3]["title"] == "Read a.txt"
        assert "a.txt has 1 line." in reply_text(updates)


# -- write and permissions ----------------------------------------------------------


async def test_write_allowed_goes_through_fs_write(workspace: Path) -> None:
    (workspace / "notes.txt").write_text("old\n")
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        answer, updates = await agent.prompt(session, "write notes.txt new text here")
        assert answer["result"]["stopReason"] == "end_turn"
        target = str(workspace / "notes.txt")
        (edit,) = [u for u in updates if u["sessionUpdate"] == "tool_call" and u["kind"] == "edit"]
        assert edit["toolCallId"] == "call_2" and edit["status"] == "pending"
        assert edit["rawInput"] == {"path": target, "content": "new text here"}
        assert edit["content"] == [
            {"type": "diff", "path": target, "oldText": "old\n", "newText": "new text here"}
        ]
        (permission,) = agent.requests("session/request_permission")
        assert permission["params"]["toolCall"]["toolCallId"] == "call_2"
        assert [o["optionId"] for o in permission["params"]["options"]] == [
            "allow",
            "allow-always",
            "reject",
        ]
        assert [o["kind"] for o in permission["params"]["options"]] == [
            "allow_once",
            "allow_always",
            "reject_once",
        ]
        (write,) = agent.requests("fs/write_text_file")
        assert write["params"] == {"sessionId": session, "path": target, "content": "new text here"}
        assert (workspace / "notes.txt").read_text() == "new text here"
        assert tool_statuses(updates, "call_2") == ["pending", "in_progress", "completed"]
        assert "You said: write notes.txt" in reply_text(updates)


async def test_write_rejected_does_not_write(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        agent.policy["permission"] = "reject"
        answer, updates = await agent.prompt(session, "write new.txt data")
        assert answer["result"]["stopReason"] == "end_turn"
        assert tool_statuses(updates, "call_2") == ["pending", "failed"]
        assert updates[[u.get("toolCallId") for u in updates].index("call_2") + 1]["rawOutput"] == {
            "error": "rejected by user"
        }
        assert agent.requests("fs/write_text_file") == []
        assert not (workspace / "new.txt").exists()
        assert "did not write new.txt" in reply_text(updates)


async def test_permission_cancelled_outcome_cancels_the_turn(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        agent.policy["permission"] = "cancelled"
        answer, _ = await agent.prompt(session, "write new.txt data")
        assert answer["result"] == {"stopReason": "cancelled"}


async def test_bare_permission_without_tool_call(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        answer, updates = await agent.prompt(session, "ask-permission-bare")
        assert answer["result"]["stopReason"] == "end_turn"
        (permission,) = agent.requests("session/request_permission")
        assert permission["params"]["toolCall"]["toolCallId"] == "call_bare"
        assert not any(u["sessionUpdate"] == "tool_call" for u in updates)
        assert tool_statuses(updates, "call_bare") == ["completed"]


async def test_answers_correlate_by_id_out_of_order(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        await agent.initialize()
        first, second = await agent.new_session(workspace), await agent.new_session(workspace)
        agent.policy["permission"] = "hold"
        ids = [
            agent.start_request(
                "session/prompt",
                {
                    "sessionId": session,
                    "prompt": [{"type": "text", "text": f"write {name}.txt {name}"}],
                },
            )
            for session, name in ((first, "one"), (second, "two"))
        ]
        await agent.wait_for(lambda: len(agent.held) == 2)
        by_session = {request["params"]["sessionId"]: request for request in agent.held}
        agent.reply(by_session[second], {"outcome": {"outcome": "selected", "optionId": "allow"}})
        agent.reply(by_session[first], {"outcome": {"outcome": "selected", "optionId": "reject"}})
        for msg_id in ids:
            assert (await agent.response(msg_id))["result"]["stopReason"] == "end_turn"
        assert (workspace / "two.txt").read_text() == "two"
        assert not (workspace / "one.txt").exists()
        assert "did not write one.txt" in reply_text(agent.updates(first))


# -- cancel -------------------------------------------------------------------------


async def test_cancel_mid_slow(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        msg_id = agent.start_request(
            "session/prompt",
            {"sessionId": session, "prompt": [{"type": "text", "text": "slow 50"}]},
        )
        await agent.wait_for(lambda: "chunk 3/50" in reply_text(agent.updates(session)))
        busy = await agent.call("session/prompt", {"sessionId": session, "prompt": []})
        assert busy["error"]["code"] == -32000  # one prompt at a time
        agent.notify("session/cancel", {"sessionId": session})
        answer = await agent.response(msg_id, timeout=2.0)
        assert answer["result"] == {"stopReason": "cancelled"}
        assert "chunk 50/50" not in reply_text(agent.updates(session))
        answer, updates = await agent.prompt(session, "after")  # the session is free again
        assert "You said: after" in reply_text(updates)


async def test_cancel_abandons_pending_permission(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        agent.policy["permission"] = "hold"
        msg_id = agent.start_request(
            "session/prompt",
            {"sessionId": session, "prompt": [{"type": "text", "text": "tools 3 permission"}]},
        )
        await agent.wait_for(lambda: agent.held)
        agent.notify("session/cancel", {"sessionId": session})
        answer = await agent.response(msg_id)
        assert answer["result"] == {"stopReason": "cancelled"}
        agent.reply(agent.held[0], {"outcome": {"outcome": "cancelled"}})  # late: dropped
        agent.policy["permission"] = "allow"
        answer, updates = await agent.prompt(session, "tools 1 permission")
        assert answer["result"]["stopReason"] == "end_turn"
        assert tool_statuses(updates, "call_1") == ["pending", "in_progress", "completed"]


# -- tools, history, load, auth -----------------------------------------------------


async def test_tools_5_statuses(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        answer, updates = await agent.prompt(session, "tools 5")
        assert answer["result"]["stopReason"] == "end_turn"
        calls = [u for u in updates if u["sessionUpdate"] == "tool_call"]
        assert [c["toolCallId"] for c in calls] == [f"call_{k}" for k in range(1, 6)]
        assert [c["kind"] for c in calls] == ["read", "search", "execute", "read", "search"]
        assert [c["title"] for c in calls] == [f"Tool {k}" for k in range(1, 6)]
        assert [c["rawInput"] for c in calls] == [{"k": k} for k in range(1, 6)]
        for k in range(1, 6):
            end = "failed" if k % 3 == 0 else "completed"
            assert tool_statuses(updates, f"call_{k}") == ["pending", "in_progress", end]
        outputs = [u["rawOutput"] for u in updates if "rawOutput" in u]
        assert outputs == [{"k": 1}, {"k": 2}, {"error": "tool 3 failed"}, {"k": 4}, {"k": 5}]


async def test_auth_required(workspace: Path) -> None:
    async with spawn(workspace, DEMO_AGENT_REQUIRE_AUTH="demo-key") as agent:
        result = await agent.initialize()
        assert result["authMethods"] == [{"id": "demo-key", "name": "Demo key"}]
        params = {"cwd": str(workspace), "mcpServers": []}
        assert (await agent.call("session/new", params))["error"] == {
            "code": -32000,
            "message": "Authentication required",
        }
        wrong = await agent.call("authenticate", {"methodId": "other"})
        assert wrong["error"]["code"] == -32602
        assert await agent.result("authenticate", {"methodId": "demo-key"}) == {}
        assert "sessionId" in await agent.result("session/new", params)


async def test_load_replays_history(workspace: Path, tmp_path: Path) -> None:
    env = {"DEMO_AGENT_LOAD": "1", "DEMO_AGENT_STATE_DIR": str(tmp_path / "state")}
    async with spawn(workspace, **env) as agent:
        assert (await agent.initialize())["agentCapabilities"]["loadSession"] is True
        session = await agent.new_session(workspace)
        _, first = await agent.prompt(session, "first prompt")
        await agent.prompt(session, "second prompt")
        agent.close_stdin()
        assert await agent.exit_code() == 0
    assert (tmp_path / "state" / f"{session}.json").is_file()
    async with spawn(workspace, **env) as agent:
        await agent.initialize()
        params = {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
        start_index = len(agent.messages)
        msg_id = agent.start_request("session/load", params)
        answer = await agent.response(msg_id)
        assert set(answer["result"]) == {"modes", "configOptions"}  # at the defaults again
        assert answer["result"]["modes"]["currentModeId"] == "code"
        replay = agent.updates(session, start_index, agent.responses[msg_id])
        assert kinds(replay) == ["user_message_chunk", "agent_message_chunk"] * 2 + [
            "available_commands_update"
        ]
        assert replay[0]["content"] == {"type": "text", "text": "first prompt"}
        assert replay[1]["content"]["text"] == reply_text(first)
        _, updates = await agent.prompt(session, "history")
        assert "History: first prompt | second prompt" in reply_text(updates)
        missing = dict(params, sessionId="00000000-0000-4000-8000-000000000000")
        assert (await agent.call("session/load", missing))["error"]["code"] == -32002


# -- flood --------------------------------------------------------------------------


async def test_flood_count_and_timestamps(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        before = time.time()
        answer, updates = await agent.prompt(session, "flood 500")
        after = time.time()
        assert answer["result"]["stopReason"] == "end_turn"
        stamped = [u for u in updates if "demo" in u.get("_meta", {})]
        assert len(stamped) == 500
        assert [u["_meta"]["demo"]["i"] for u in stamped] == list(range(500))
        times = [u["_meta"]["demo"]["t"] for u in stamped]
        assert times == sorted(times) and before <= times[0] and times[-1] <= after
        assert {u["sessionUpdate"] for u in stamped} == {"agent_message_chunk"}
        assert all(90 <= len(u["content"]["text"]) <= 110 for u in stamped)
        # the text starts with the same facts (t when built, just before the write)
        in_text = [parse_stamp(u["content"]["text"]) for u in stamped]
        assert [s[1] for s in in_text if s] == list(range(500))
        assert all(
            s and before <= s[0] <= u["_meta"]["demo"]["t"]
            for s, u in zip(in_text, stamped, strict=True)
        )


async def test_flood_tool_paced(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        before = time.time()
        answer, updates = await agent.prompt(session, "flood 21 tool rate=200")
        assert answer["result"]["stopReason"] == "end_turn"
        stamped = [u for u in updates if "demo" in u.get("_meta", {})]
        assert len(stamped) == 21
        assert {u["toolCallId"] for u in stamped} == {"call_flood"}
        assert all(len(u["content"][0]["content"]["text"]) >= 5000 for u in stamped)
        in_text = [parse_stamp(u["content"][0]["content"]["text"]) for u in stamped]
        assert [s[1] for s in in_text if s] == list(range(21))
        # paced: update i is not written before its slot, i / 200 s after the start
        times = [u["_meta"]["demo"]["t"] for u in stamped]
        assert all(t >= before + i / 200 - 0.001 for i, t in enumerate(times))


# -- misbehaviours ------------------------------------------------------------------


async def test_crash_exits_3(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        msg_id = agent.start_request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "crash"}]}
        )
        assert await agent.exit_code() == 3
        await agent.wait_for(lambda: b"crashing on purpose" in agent.stderr)
        assert (
            kinds(agent.updates(session))
            == ["available_commands_update"] + ["agent_message_chunk"] * 2
        )
        assert msg_id not in agent.responses


async def test_fail_start(workspace: Path) -> None:
    async with spawn(workspace, DEMO_AGENT_MODE="fail-start") as agent:
        assert await agent.exit_code() == 2
        await agent.wait_for(lambda: b"demo agent: cannot start (fail-start)" in agent.stderr)
        assert agent.messages == [] and agent.noise == []


async def test_bad_environment_fails_start(workspace: Path) -> None:
    async with spawn(workspace, DEMO_AGENT_LOAD="1") as agent:
        assert await agent.exit_code() == 2
        await agent.wait_for(lambda: b"DEMO_AGENT_STATE_DIR" in agent.stderr)


async def test_start_time_modes(workspace: Path) -> None:
    env = {"DEMO_AGENT_MODE": "slow-start:0.3,error-new-session"}
    async with spawn(workspace, **env) as agent:
        began = time.monotonic()
        await agent.initialize()
        assert time.monotonic() - began >= 0.3
        answer = await agent.call("session/new", {"cwd": str(workspace), "mcpServers": []})
        assert answer["error"] == {"code": -32603, "message": "demo failure"}


async def test_env_ignore_sigterm(workspace: Path) -> None:
    async with spawn(workspace, DEMO_AGENT_MODE="ignore-sigterm") as agent:
        await agent.initialize()
        agent.proc.send_signal(signal.SIGTERM)
        await agent.initialize()  # still answering
        assert agent.proc.returncode is None


async def test_env_turn_modes(workspace: Path) -> None:
    async with spawn(workspace, DEMO_AGENT_MODE="garbage") as agent:
        session = await start(workspace, agent)
        assert agent.noise == [b"Loading model..."]  # before the initialize response
        answer, _ = await agent.prompt(session, "tools 2")
        assert answer["result"]["stopReason"] == "end_turn"
        assert agent.noise[1:] == [b"Loading model...", b"{not json", b"[1,2]", b"42"]
    async with spawn(workspace, DEMO_AGENT_MODE="crash") as agent:
        session = await start(workspace, agent)
        agent.start_request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hello"}]}
        )
        assert await agent.exit_code() == 3


async def test_garbage_lines_between_updates(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        answer, updates = await agent.prompt(session, "garbage")
        assert answer["result"]["stopReason"] == "end_turn"
        assert agent.noise == [b"Loading model...", b"{not json", b"[1,2]", b"42"]
        assert "You said: garbage" in reply_text(updates)


async def test_huge_line(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        answer, updates = await agent.prompt(session, "huge-line 3000000")
        assert answer["result"]["stopReason"] == "end_turn"
        assert len(updates[0]["content"]["text"]) == 3_000_000


async def test_endless_line_never_ends(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        agent.start_request(
            "session/prompt",
            {"sessionId": session, "prompt": [{"type": "text", "text": "endless-line"}]},
        )
        await agent.wait_for(lambda: agent.partial > 3 << 20)
        agent.close_stdin()  # ignored: it runs until killed
        with pytest.raises(TimeoutError):
            await agent.exit_code(timeout=0.3)


async def test_stderr_flood_then_normal_end(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        answer, _ = await agent.prompt(session, "stderr-flood 2")
        assert answer["result"]["stopReason"] == "end_turn"
        assert len(agent.stderr) >= 2 << 20


async def test_hang_ignores_cancel_eof_and_sigterm(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        msg_id = agent.start_request(
            "session/prompt",
            {"sessionId": session, "prompt": [{"type": "text", "text": "ignore-sigterm hang"}]},
        )
        await agent.wait_for(lambda: b"hanging on purpose" in agent.stderr)
        agent.notify("session/cancel", {"sessionId": session})
        agent.close_stdin()
        agent.proc.send_signal(signal.SIGTERM)
        with pytest.raises(TimeoutError):
            await agent.exit_code(timeout=0.5)
        assert msg_id not in agent.responses
        agent.proc.kill()
        assert await agent.exit_code() == -signal.SIGKILL


async def test_grandchildren_share_the_process_group(workspace: Path) -> None:
    async with spawn(workspace) as agent:
        session = await start(workspace, agent)
        answer, updates = await agent.prompt(session, "grandchildren")
        assert answer["result"]["stopReason"] == "end_turn"
        line = next(t for t in reply_text(updates).splitlines() if t.startswith("grandchildren:"))
        pids = [int(pid) for pid in line.split()[1:]]
        assert len(pids) == 2
        assert all(os.getpgid(pid) == agent.proc.pid for pid in pids)


# -- the official schema (needs jsonschema) -----------------------------------------

_RESULT_SCHEMAS = {
    "initialize": "InitializeResponse",
    "authenticate": "AuthenticateResponse",
    "session/new": "NewSessionResponse",
    "session/load": "LoadSessionResponse",
    "session/prompt": "PromptResponse",
}
_REQUEST_SCHEMAS = {
    "session/update": "SessionNotification",
    "session/request_permission": "RequestPermissionRequest",
    "fs/read_text_file": "ReadTextFileRequest",
    "fs/write_text_file": "WriteTextFileRequest",
}


async def test_messages_match_the_acp_schema(workspace: Path, tmp_path: Path) -> None:
    jsonschema = pytest.importorskip(
        "jsonschema",
        reason="jsonschema is not installed here (not a project dependency); only this full "
        "schema validation is skipped, the structural check in every other test still runs",
    )
    if SCHEMA is None:
        pytest.skip(f"no ACP schema at {SCHEMA_PATH}")
    defs = SCHEMA["$defs"]

    def validator(name: str) -> Any:
        return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": defs})

    env = {
        "DEMO_AGENT_LOAD": "1",
        "DEMO_AGENT_STATE_DIR": str(tmp_path / "state"),
        "DEMO_AGENT_REQUIRE_AUTH": "demo-key",
    }
    async with spawn(workspace, **env) as agent:
        await agent.initialize()
        await agent.result("authenticate", {"methodId": "demo-key"})
        session = await agent.new_session(workspace)
        for text in (
            "hello",
            "write out.txt hi",
            "ask-permission-bare",
            "tools 3",
            "flood 3 tool",
            "flood 2",
            "slow 2",
            "history",
            "grandchildren",
        ):
            await agent.prompt(session, text)
        agent.policy["permission"] = "reject"
        await agent.prompt(session, "write out.txt again")
        await agent.call(
            "session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []}
        )
        await agent.call("session/prompt", {"sessionId": "nope", "prompt": []})
        problems: list[str] = []
        for message in agent.messages:
            if message.get("jsonrpc") != "2.0":
                problems.append(f"no jsonrpc 2.0: {message}")
            if "method" in message:
                checked, name = message["params"], _REQUEST_SCHEMAS[message["method"]]
            elif "error" in message:
                checked, name = message["error"], "Error"
            else:
                checked, name = message["result"], _RESULT_SCHEMAS[agent.sent[message["id"]]]
            problems += [f"{name}: {e.message}" for e in validator(name).iter_errors(checked)]
        assert problems == []
