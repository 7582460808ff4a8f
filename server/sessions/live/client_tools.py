"""Client tools (API.md "Client tools"): tools a client registers on a session and
carries out itself; the agent calls them through the MCP server the server hosts
(``server.mcp_host``), and its turn waits for a client's answer.

``ClientToolHost`` is one agent process's side of it: the tool set, the secret made for
that process, its MCP sessions, and the calls waiting for an answer. A call is stored as
a ``client_tool`` message (``outcome`` null) before any client can see it, the first
answer wins, and every ending (answered, timeout, cancelled, server_restarted) is stored
once as a second ``client_tool`` message with the outcome, as permission requests are.
"""

from __future__ import annotations

import hmac
import logging
import re
import secrets
import uuid
from collections.abc import Callable
from types import EllipsisType
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
import orjson

from agent_bridge.jsontypes import JsonObject, JsonValue
from server.mcp_host.sessions import McpSessions
from server.sessions.errors import Conflict, Invalid, NotFound, TooLarge
from server.sessions.live.turn import Turn
from server.stream.writer import Draft, Writer

if TYPE_CHECKING:
    from agent_bridge import AcpClient
    from server.sessions.live.controls_state import ControlsState
    from server.settings import Settings

__all__ = [
    "MAX_TOOLS",
    "SERVER_NAME",
    "ClientToolHost",
    "answer_of",
    "check_tools",
    "mcp_url",
    "tools_of",
]

log = logging.getLogger("agent_sessions.client_tools")

MAX_TOOLS = 32
SERVER_NAME = "client-tools"  # the MCP server's name in session/new
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_FIELDS = frozenset({"name", "description", "inputSchema"})


# -- the tool set ---------------------------------------------------------------------------


def _validator(schema: JsonObject) -> Any:
    """The validator class ``$schema`` names (draft 2020-12 without one). jsonschema is
    imported on first use, not at start-up (~0.1 s of import)."""
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    return validator_for(schema, default=Draft202012Validator)


def _check_schema(schema: object, where: str) -> JsonObject:
    if not isinstance(schema, dict):
        raise Invalid(f"{where}.inputSchema must be a JSON Schema object.", field=where)
    if schema.get("type") != "object":
        raise Invalid(
            f'{where}.inputSchema must describe an object ("type": "object"), as MCP wants.',
            field=where,
        )
    from jsonschema import SchemaError

    try:
        _validator(schema).check_schema(schema)
    except SchemaError as exc:
        raise Invalid(f"{where}.inputSchema is not a valid JSON Schema: {exc.message}") from None
    return schema


def check_tools(value: object) -> list[JsonObject]:
    """A client's tool set (``tools`` of PUT, ``clientTools`` of create), checked: at most
    32, each ``{name, description, inputSchema}`` with a unique name. Invalid: 422."""
    if not isinstance(value, list):
        raise Invalid("tools must be a list of tools.", field="tools")
    if len(value) > MAX_TOOLS:
        raise Invalid(f"At most {MAX_TOOLS} client tools per session.", field="tools")
    tools: list[JsonObject] = []
    names: set[str] = set()
    for index, tool in enumerate(value):
        where = f"tools[{index}]"
        if not isinstance(tool, dict):
            raise Invalid(f"{where} must be an object.", field=where)
        unknown = sorted(set(tool) - _FIELDS)
        if unknown:
            raise Invalid(f"{where} has unknown fields: {', '.join(unknown)}.", field=where)
        name = tool.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise Invalid(f"{where}.name must match ^[A-Za-z0-9_-]{{1,64}}$.", field=where)
        if name in names:
            raise Invalid(f"{where}.name {name!r} is used twice.", field=where)
        names.add(name)
        description = tool.get("description", "")
        if not isinstance(description, str):
            raise Invalid(f"{where}.description must be a string.", field=where)
        schema = _check_schema(tool.get("inputSchema"), where)
        tools.append({"name": name, "description": description, "inputSchema": schema})
    return tools


def tools_of(stored: JsonValue | None) -> list[JsonObject]:
    """The ``client_tools`` column as a tool set (what was stored was checked)."""
    return [t for t in stored if isinstance(t, dict)] if isinstance(stored, list) else []


def mcp_url(settings: Settings, session_id: str, *, isolated: bool = False) -> str:
    """Where the agent reaches the session's MCP server: this server's own address and
    port (the agent runs on this machine). An agent with a network of its own
    (``isolated``: a sandbox under ``AGENT_NETWORK=none`` or ``proxy``) reaches it at
    ``127.0.0.1`` and the same port of its own loopback, where the sandbox's forwarder
    carries it to the session's MCP relay (docs/client-tools.md)."""
    host = "127.0.0.1" if isolated else settings.own_address()
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{settings.port}/mcp/sessions/{session_id}"


# -- answers ----------------------------------------------------------------------------


class Answer(msgspec.Struct, frozen=True):
    result: JsonValue
    content: list[JsonObject] | None
    is_error: bool


def answer_of(body: JsonObject, limit: int) -> Answer:
    """``{result?, content?, isError?}`` of a REST answer or a WebSocket command, checked;
    over ``limit`` bytes (result and content as JSON): PayloadTooLarge (413)."""
    content = body.get("content")
    if content is not None and (
        not isinstance(content, list)
        or not all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in content)
    ):
        raise Invalid("content must be a list of MCP content blocks (each with a type).")
    is_error = body.get("isError", False)
    if not isinstance(is_error, bool):
        raise Invalid("isError must be true or false.", field="isError")
    result = body.get("result")
    size = len(orjson.dumps([result, content]))
    if size > limit:
        raise TooLarge("client tool answer (result and content as JSON)", limit)
    return Answer(result, content, is_error)


def mcp_result(answer: Answer) -> JsonObject:
    """The ``tools/call`` result for an answer: its content blocks, or the result as
    text (and as ``structuredContent`` when it is an object)."""
    result: JsonObject = {"isError": answer.is_error}
    if answer.content is not None:
        result["content"] = list(answer.content)
    else:
        text = answer.result if isinstance(answer.result, str) else orjson.dumps(answer.result)
        result["content"] = [
            {"type": "text", "text": text if isinstance(text, str) else text.decode()}
        ]
    if isinstance(answer.result, dict) and not answer.is_error:
        result["structuredContent"] = answer.result
    return result


def tool_error(text: str) -> JsonObject:
    return {"isError": True, "content": [{"type": "text", "text": text}]}


# -- one agent process's calls --------------------------------------------------------------


class PendingCall(msgspec.Struct):
    call_id: str
    run_id: str | None
    content: JsonObject  # the stored message, ``outcome`` still null
    decided: anyio.Event = msgspec.field(default_factory=anyio.Event)
    committed: anyio.Event = msgspec.field(default_factory=anyio.Event)
    answer: Answer | None = None
    outcome: str | None = None


class ClientToolHost:
    """The client tools of one agent process (a live session)."""

    def __init__(
        self,
        session_id: str,
        tools: list[JsonObject],
        writer: Writer,
        settings: Settings,
        current_turn: Callable[[], Turn | None],
    ) -> None:
        self.session_id = session_id
        self.tools = tools
        self.writer = writer
        self.settings = settings
        self._turn = current_turn
        # Made for this agent process and given only to it (in session/new): never a
        # user's token, and worthless once the process is gone.
        self.secret = secrets.token_urlsafe(32)
        self.offered = False
        self.isolated = False  # the agent has a network of its own (its sandbox's relay)
        self.mcp = McpSessions()
        self.calls: dict[str, PendingCall] = {}
        self.closed = False
        self.lists = 0

    # -- offering the MCP server ----------------------------------------------------------

    def offer(self, client: AcpClient, controls: ControlsState) -> None:
        """Add the ``client-tools`` MCP server to what session/new (load, resume) passes,
        where the agent takes HTTP MCP; else name it in the controls as not offered.
        Runs after the session's other MCP servers are chosen."""
        controls.mcp_servers = [
            n for n in controls.mcp_servers if isinstance(n, str) and n != SERVER_NAME
        ]
        self.offered = False
        if not self.tools:
            return
        caps = client.agent_capabilities.get("mcpCapabilities")
        if not (isinstance(caps, dict) and caps.get("http") is True):
            controls.mcp_servers.append(
                {"name": SERVER_NAME, "transport": "http", "offered": False}
            )
            return
        client.mcp_servers = [
            *client.mcp_servers,
            {
                "type": "http",
                "name": SERVER_NAME,
                "url": mcp_url(self.settings, self.session_id, isolated=self.isolated),
                "headers": [{"name": "Authorization", "value": f"Bearer {self.secret}"}],
            },
        ]
        controls.mcp_servers.append(SERVER_NAME)
        self.offered = True

    def accepts(self, presented: str) -> bool:
        """Whether ``presented`` is this process's secret (in constant time)."""
        return not self.closed and hmac.compare_digest(presented.encode(), self.secret.encode())

    def replace(self, tools: list[JsonObject], client: AcpClient, turn_running: bool) -> bool:
        """A client replaced the set. Returns whether the agent must start again to be
        offered the server: it was not offered (no tools at its start), takes HTTP MCP,
        can restore its own session, and runs no turn."""
        if self.offered or not tools:
            self.set_tools(tools)
            return False
        self.tools = tools
        caps = client.agent_capabilities.get("mcpCapabilities")
        restorable = client.can_load or client.can_resume
        http = isinstance(caps, dict) and caps.get("http") is True
        return http and restorable and not turn_running

    def set_tools(self, tools: list[JsonObject]) -> None:
        """A client replaced the set: the agent's MCP sessions hear of it."""
        if tools == self.tools:
            return
        self.tools = tools
        self.mcp.announce({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})

    def listed(self) -> list[JsonObject]:
        """The set as ``tools/list`` gives it (``lists`` counts the agent's asks)."""
        self.lists += 1
        return [dict(t) for t in self.tools]

    # -- calls ----------------------------------------------------------------------------

    async def call(self, name: str, arguments: JsonValue) -> JsonObject:
        """A ``tools/call``: checked against the tool's schema (invalid: a tool error,
        nothing stored), stored, and answered with the first client's answer, a timeout
        or a cancel, as a ``tools/call`` result."""
        tool = next((t for t in self.tools if t["name"] == name), None)
        if tool is None:
            return tool_error(f"No client tool named {name!r}.")
        arguments = {} if arguments is None else arguments
        validator = _validator(tool["inputSchema"])(tool["inputSchema"])
        problems = sorted(validator.iter_errors(arguments), key=str)
        if problems:
            where = "/".join(str(p) for p in problems[0].absolute_path) or "(input)"
            return tool_error(f"Invalid input for {name} at {where}: {problems[0].message}")
        if self.closed:
            return tool_error("The session's agent is stopping.")
        pending = self._ask(name, arguments)
        try:
            with anyio.move_on_after(self.settings.client_tool_timeout):
                await pending.decided.wait()
        except anyio.get_cancelled_exc_class():  # the agent gave up the request
            self._decide(pending, None, "cancelled")
            raise
        if not pending.decided.is_set():
            self._decide(pending, None, "timeout")
        if pending.outcome == "answered" and pending.answer is not None:
            return mcp_result(pending.answer)
        if pending.outcome == "timeout":
            return tool_error(f"No client answered within {self.settings.client_tool_timeout:g} s.")
        return tool_error("The call was cancelled.")

    def _ask(self, name: str, arguments: JsonValue) -> PendingCall:
        turn = self._turn()
        run_id, step = (turn.run_id, turn.step_number) if turn is not None else (None, None)
        call_id = str(uuid.uuid4())
        content: JsonObject = {
            "type": "client_tool",
            "callId": call_id,
            "name": name,
            "input": arguments,
            "result": None,
            "isError": False,
            "outcome": None,
        }
        pending = PendingCall(call_id, run_id, content)
        # Known before its message can reach anyone: an answer finds it at once.
        self.calls[call_id] = pending
        self.writer.submit(self.session_id, [Draft("system", content, None, run_id, step)])
        return pending

    def answer(self, call_id: str, answer: Answer, by: JsonObject) -> anyio.Event:
        """A client's answer; the first one wins (409 after). Returns the commit event."""
        pending = self.calls.get(call_id)
        if pending is None:
            raise call_not_found(call_id)
        if pending.decided.is_set():
            raise already_answered()
        return self._decide(pending, answer, "answered", by)

    def waiting(self) -> int:
        return sum(1 for p in self.calls.values() if not p.decided.is_set())

    def cancel(self, run_id: str | None | EllipsisType = ...) -> None:
        """End the waiting calls (all, or those of run ``run_id``) as ``cancelled``."""
        for pending in list(self.calls.values()):
            if run_id is ... or pending.run_id == run_id:
                self._decide(pending, None, "cancelled")

    def close(self) -> None:
        """The agent is gone: its calls end ``cancelled``, its event streams close, its
        secret opens nothing any more."""
        self.closed = True
        self.cancel()
        self.mcp.close_all()

    def _decide(
        self, pending: PendingCall, answer: Answer | None, outcome: str, by: Any = None
    ) -> anyio.Event:
        if pending.decided.is_set():
            return pending.committed
        pending.answer, pending.outcome = answer, outcome
        pending.decided.set()
        self.calls.pop(pending.call_id, None)
        content: JsonObject = {**pending.content, "outcome": outcome, "by": by}
        if answer is not None:
            content["result"] = answer.result
            content["isError"] = answer.is_error
            if answer.content is not None:
                content["content"] = list(answer.content)
        else:
            content["isError"] = True
        turn = self._turn()
        draft = Draft("system", content, None, pending.run_id, turn.step_number if turn else None)
        pending.committed = self.writer.submit(self.session_id, [draft]).committed
        return pending.committed


def call_not_found(call_id: str) -> NotFound:
    return NotFound("client_tool_call", call_id, f"No client tool call {call_id} in this session.")


def already_answered() -> Conflict:
    return Conflict("client_tool_already_answered", "This client tool call was already answered.")
