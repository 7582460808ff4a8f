"""The ACP client: the editor's side of the Agent Client Protocol.

It drives the agent (initialize, authenticate, session/new|load|resume, prompt, cancel)
and answers what the agent asks of the client: permissions and elicitations (relayed to
the host through ``ClientCallbacks``), file access confined to the session's
``Workspace``, terminals, and -32601 for anything else.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Protocol

import anyio

from agent_bridge import jsonrpc
from agent_bridge.acp_types import (
    ContentBlock,
    EmptyResult,
    McpServer,
    ReadTextFileResult,
    TerminalResult,
)
from agent_bridge.connection import AgentConnection
from agent_bridge.errors import RpcError
from agent_bridge.jsontypes import JsonObject, JsonValue
from agent_bridge.workspace import FileNotFound, Workspace, WorkspaceError

__all__ = ["PROTOCOL_VERSION", "AcpClient", "ClientCallbacks", "TerminalHost"]

PROTOCOL_VERSION = 1
CLIENT_INFO = {"name": "agent-sessions", "title": "agent-sessions", "version": "0.1.0"}
RESOURCE_NOT_FOUND = -32002

log = logging.getLogger("agent_sessions.bridge")


class ClientCallbacks(Protocol):
    """What the host does with what the agent sends."""

    async def on_session_update(
        self, update: JsonObject, raw: JsonObject, *, replayed: bool
    ) -> None:
        """One ``session/update``, in arrival order. ``replayed`` during session/load.

        A host may also offer ``on_session_updates(updates, *, replayed)``: the updates
        of one read from the agent's pipe (``(update, raw)`` pairs, in order) in one
        call; it is used instead when present."""
        ...

    async def on_permission_request(
        self, params: JsonObject, raw: JsonObject
    ) -> Awaitable[JsonObject]:
        """Register the request (in order); return the awaitable ``outcome`` object
        (``acp_types.PermissionOutcome``)."""
        ...

    async def on_elicitation_request(
        self, params: JsonObject, raw: JsonObject
    ) -> Awaitable[JsonObject]:
        """``elicitation/create`` (only when the client was made with ``elicitation``):
        register it (in order); return the awaitable answer (``{action, content?}``)."""
        ...


class TerminalHost(Protocol):
    async def handle(self, method: str, params: JsonObject) -> TerminalResult: ...


class AcpClient:
    """One agent session's client. Bind it to a connection, then call its methods."""

    def __init__(
        self,
        callbacks: ClientCallbacks,
        workspace: Workspace,
        *,
        terminals: TerminalHost | None = None,
        request_timeout: float = 60.0,
        elicitation: bool = False,
    ) -> None:
        self._callbacks = callbacks
        self._elicitation = elicitation
        self._workspace = workspace
        self._terminals = terminals
        self._timeout = request_timeout
        self._conn: AgentConnection | None = None
        self._replaying = False
        self.session_id: str | None = None
        self.init_result: JsonObject = {}
        self.mcp_servers: list[McpServer] = []
        """ACP ``McpServer``s passed in session/new, load and resume (their env and
        headers hold secrets: never logged)."""
        self.session_result: JsonObject = {}
        """The answer to session/new, load or resume (modes, configOptions, models)."""

    # -- capabilities ------------------------------------------------------------------

    def bind(self, conn: AgentConnection) -> None:
        self._conn = conn

    @property
    def connection(self) -> AgentConnection:
        if self._conn is None:
            raise RuntimeError("AcpClient is not bound to a connection")
        return self._conn

    @property
    def agent_capabilities(self) -> JsonObject:
        caps = self.init_result.get("agentCapabilities")
        return caps if isinstance(caps, dict) else {}

    @property
    def auth_method_ids(self) -> list[str]:
        methods = self.init_result.get("authMethods") or []
        return [str(m.get("id")) for m in methods if isinstance(m, dict) and m.get("id")]

    @property
    def can_load(self) -> bool:
        return bool(self.agent_capabilities.get("loadSession"))

    @property
    def can_resume(self) -> bool:
        session_caps = self.agent_capabilities.get("sessionCapabilities") or {}
        return isinstance(session_caps, dict) and session_caps.get("resume") is not None

    @property
    def can_close(self) -> bool:
        session_caps = self.agent_capabilities.get("sessionCapabilities") or {}
        return isinstance(session_caps, dict) and session_caps.get("close") is not None

    # -- client → agent ----------------------------------------------------------------

    async def initialize(self) -> JsonObject:
        result = await self.connection.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": {
                    "fs": {"readTextFile": True, "writeTextFile": True},
                    "terminal": self._terminals is not None,
                    **self._elicitation_capability(),
                },
                "clientInfo": CLIENT_INFO,
            },
        )
        self.init_result = result if isinstance(result, dict) else {}
        return self.init_result

    def _elicitation_capability(self) -> JsonObject:
        """Form and URL elicitation; ACP's schema spells "supported" as an empty object."""
        return {"elicitation": {"form": {}, "url": {}}} if self._elicitation else {}

    async def authenticate(self, method_id: str) -> None:
        await self.connection.request(
            "authenticate", {"methodId": method_id}, timeout=self._timeout
        )

    async def new_session(self) -> str:
        result = await self.connection.request(
            "session/new", {"cwd": str(self._workspace.root), "mcpServers": self.mcp_servers}
        )
        if not isinstance(result, dict) or not isinstance(result.get("sessionId"), str):
            raise RpcError(jsonrpc.INVALID_PARAMS, "session/new returned no sessionId")
        self.session_result = result
        self.session_id = result["sessionId"]
        return self.session_id

    async def load_session(self, session_id: str) -> None:
        """session/load: the agent replays its history first; those updates reach the
        callbacks with ``replayed=True`` so the host does not store them twice."""
        self._replaying = True
        try:
            result = await self.connection.request(
                "session/load",
                {
                    "sessionId": session_id,
                    "cwd": str(self._workspace.root),
                    "mcpServers": self.mcp_servers,
                },
                timeout=self._timeout,
            )
        finally:
            self._replaying = False
        self.session_result = result if isinstance(result, dict) else {}
        self.session_id = session_id

    async def resume_session(self, session_id: str) -> None:
        result = await self.connection.request(
            "session/resume",
            {
                "sessionId": session_id,
                "cwd": str(self._workspace.root),
                "mcpServers": self.mcp_servers,
            },
            timeout=self._timeout,
        )
        self.session_result = result if isinstance(result, dict) else {}
        self.session_id = session_id

    async def set_mode(self, mode_id: str) -> None:
        await self.connection.request(
            "session/set_mode",
            {"sessionId": self.session_id, "modeId": mode_id},
            timeout=self._timeout,
        )

    async def set_config_option(self, config_id: str, value: JsonValue) -> JsonObject:
        """session/set_config_option; returns the answer (the full ``configOptions``)."""
        params: JsonObject = {"sessionId": self.session_id, "configId": config_id}
        if isinstance(value, bool):
            params.update(type="boolean", value=value)
        else:
            params["value"] = value
        result = await self.connection.request(
            "session/set_config_option", params, timeout=self._timeout
        )
        return result if isinstance(result, dict) else {}

    async def set_model(self, model_id: str) -> None:
        """The older session/set_model (agents that send a ``models`` block)."""
        await self.connection.request(
            "session/set_model",
            {"sessionId": self.session_id, "modelId": model_id},
            timeout=self._timeout,
        )

    async def prompt(self, blocks: list[ContentBlock]) -> JsonObject:
        """One turn; returns the prompt result (``stopReason``, maybe ``usage``)."""
        result = await self.connection.request(
            "session/prompt", {"sessionId": self.session_id, "prompt": blocks}
        )
        return result if isinstance(result, dict) else {}

    async def cancel(self) -> None:
        if self.session_id is not None:
            await self.connection.notify("session/cancel", {"sessionId": self.session_id})

    async def close_session(self) -> None:
        """The polite stop: session/close where offered, else cancel."""
        if self.session_id is None:
            return
        if self.can_close:
            try:
                await self.connection.request("session/close", {"sessionId": self.session_id})
            except Exception:  # noqa: BLE001 - best effort on the way out
                return
        else:
            await self.cancel()

    # -- agent → client ----------------------------------------------------------------

    async def on_notifications(self, notes: list[jsonrpc.Notification]) -> None:
        updates: list[tuple[JsonObject, JsonObject]] = []
        for note in notes:
            params = note.params
            if note.method == "session/update" and isinstance(params, dict):
                update = params.get("update")
                if isinstance(update, dict):
                    updates.append((update, note.raw))
        if not updates:
            return
        batch = getattr(self._callbacks, "on_session_updates", None)
        if batch is not None:
            await batch(updates, replayed=self._replaying)
            return
        for update, raw in updates:
            try:
                await self._callbacks.on_session_update(update, raw, replayed=self._replaying)
            except Exception:
                log.exception("session/update handler failed")

    async def on_request(self, request: jsonrpc.Request) -> Awaitable[JsonValue]:
        params = request.params if isinstance(request.params, dict) else {}
        method = request.method
        if method == "session/request_permission":
            self._check_session(params)
            outcome = await self._callbacks.on_permission_request(params, request.raw)
            return _wrap_outcome(outcome)
        if method == "elicitation/create" and self._elicitation:
            if "sessionId" in params or "requestId" not in params:
                self._check_session(params)  # else asked outside a session: still this agent's
            return await self._callbacks.on_elicitation_request(params, request.raw)
        if method == "fs/read_text_file":
            self._check_session(params)
            return self._read_text_file(params)
        if method == "fs/write_text_file":
            self._check_session(params)
            return self._write_text_file(params)
        if method.startswith("terminal/") and self._terminals is not None:
            self._check_session(params)
            return self._terminals.handle(method, params)
        raise RpcError(jsonrpc.METHOD_NOT_FOUND, "Method not found")

    def _check_session(self, params: JsonObject) -> None:
        if self.session_id is not None and params.get("sessionId") != self.session_id:
            raise RpcError(jsonrpc.INVALID_PARAMS, "Unknown sessionId")

    async def _read_text_file(self, params: JsonObject) -> ReadTextFileResult:
        path, line, limit = params.get("path"), params.get("line"), params.get("limit")
        if not isinstance(path, str):
            raise RpcError(jsonrpc.INVALID_PARAMS, "path must be a string")
        if not (line is None or isinstance(line, int)) or not (
            limit is None or isinstance(limit, int)
        ):
            raise RpcError(jsonrpc.INVALID_PARAMS, "line and limit must be integers")
        try:
            content = await anyio.to_thread.run_sync(
                lambda: self._workspace.read_text(path, line=line, limit=limit)
            )
        except WorkspaceError as exc:
            raise _rpc_error(exc) from None
        except ValueError:
            raise RpcError(jsonrpc.INVALID_PARAMS, "line must be >= 1 and limit >= 0") from None
        return {"content": content}

    async def _write_text_file(self, params: JsonObject) -> EmptyResult:
        path, content = params.get("path"), params.get("content")
        if not isinstance(path, str) or not isinstance(content, str):
            raise RpcError(jsonrpc.INVALID_PARAMS, "path and content must be strings")
        try:
            await anyio.to_thread.run_sync(lambda: self._workspace.write_text(path, content))
        except WorkspaceError as exc:
            raise _rpc_error(exc) from None
        return {}


async def _wrap_outcome(outcome: Awaitable[JsonObject]) -> JsonObject:
    return {"outcome": await outcome}


def _rpc_error(exc: WorkspaceError) -> RpcError:
    if isinstance(exc, FileNotFound):
        return RpcError(RESOURCE_NOT_FOUND, "Resource not found", {"path": exc.path})
    return RpcError(jsonrpc.INVALID_PARAMS, f"Refused: {exc.reason}", {"path": exc.path})
