"""The agent: ACP method dispatch, sessions, and the life of a prompt turn."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import traceback
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from . import controls, script
from .commands import Command, command_text, parse_command, prompt_text
from .config import Settings
from .sessions import HistoryStore, Session
from .turn import GARBAGE_LINES, ClientCapabilities, Turn, text_block
from .wire import JsonObject, Wire, log

__all__ = ["AGENT_INFO", "PROTOCOL_VERSION", "Agent", "RpcError", "serve"]

PROTOCOL_VERSION = 1
AGENT_INFO = {"name": "demo-agent", "version": "1.0.0"}
_DRAIN_AT_EXIT = 2.0
_FINISH_AT_EXIT = 1.0

Params = JsonObject


class RpcError(Exception):
    """Answer the current request with this JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


async def serve(settings: Settings) -> int:
    """Run the agent on stdin/stdout until stdin closes; returns the exit code."""
    return await Agent(settings, Wire()).serve()


class Agent:
    def __init__(self, settings: Settings, wire: Wire) -> None:
        self.settings = settings
        self.wire = wire
        self.client = ClientCapabilities()
        self.authenticated = settings.require_auth is None
        self.sessions: dict[str, Session] = {}
        self.store = HistoryStore(settings.state_dir if settings.load else None)
        self.children: list[subprocess.Popen[bytes]] = []
        self._handlers: set[asyncio.Task[None]] = set()
        self._methods: dict[str, Callable[[Params], Awaitable[Any]]] = {
            "initialize": self._initialize,
            "authenticate": self._authenticate,
            "session/new": self._new_session,
            "session/load": self._load_session,
            "session/prompt": self._prompt,
            "session/set_mode": self._set_mode,
            "session/set_config_option": self._set_config_option,
        }
        if settings.legacy_models:
            self._methods["session/set_model"] = self._set_model

    async def serve(self) -> int:
        code = 0
        try:
            async with asyncio.TaskGroup() as tasks:
                self.wire.start(tasks.create_task)
                tasks.create_task(self._exit_when_stdout_breaks())
                if self.settings.turn_mode == "garbage":
                    await self.wire.send(GARBAGE_LINES[0])
                await self._dispatch(tasks)
                raise _Exit(0)  # stops the writer and everything else
        except* _Exit as group:
            code = max(exc.code for exc in group.exceptions if isinstance(exc, _Exit))
        return code

    async def _exit_when_stdout_breaks(self) -> None:
        await self.wire.broken.wait()
        raise _Exit(0)

    async def _dispatch(self, tasks: asyncio.TaskGroup) -> None:
        """Handle incoming messages until stdin closes; then cancel the running turns,
        give the open requests a moment to be answered, and flush stdout."""
        while True:
            message = await self.wire.receive()
            if message is None:
                break
            if "id" in message:
                self._note_prompt(message)
                handler = tasks.create_task(self._answer(message))
                self._handlers.add(handler)
                handler.add_done_callback(self._handlers.discard)
            elif message["method"] == "session/cancel":
                self._cancel(message.get("params"))
        for session in self.sessions.values():
            if session.turn is not None:
                session.turn.cancel()
        if self._handlers:
            await asyncio.wait(self._handlers, timeout=_FINISH_AT_EXIT)
        await self.wire.wait_drained(_DRAIN_AT_EXIT)

    async def _answer(self, message: JsonObject) -> None:
        msg_id = message["id"]
        params = message.get("params", {})
        handler = self._methods.get(message["method"])
        try:
            if handler is None:
                raise RpcError(-32601, "Method not found")
            if not isinstance(params, dict):
                raise RpcError(-32602, "Invalid params: params must be an object")
            result = await handler(params)
        except RpcError as exc:
            await self.wire.send_error(msg_id, exc.code, exc.message)
        except Exception:
            log(f"internal error in {message['method']}:\n{traceback.format_exc()}")
            await self.wire.send_error(msg_id, -32603, "Internal error")
        else:
            await self.wire.send_result(msg_id, result)

    async def _announce_commands(self, result: Any, params: Params) -> None:
        """The slash commands, just before session/new or load is answered (real agents
        send them right after; this keeps the demo's first messages deterministic)."""
        session_id = result.get("sessionId") or params.get("sessionId")
        update = {
            "sessionUpdate": "available_commands_update",
            "availableCommands": controls.COMMANDS,
        }
        await self.wire.notify("session/update", {"sessionId": session_id, "update": update})

    def _session_of(self, params: object) -> Session | None:
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        return self.sessions.get(session_id) if isinstance(session_id, str) else None

    def _note_prompt(self, message: JsonObject) -> None:
        """A prompt was read; its turn starts in its own task, maybe after a cancel that
        was read right behind it (see ``_cancel``)."""
        session = (
            self._session_of(message.get("params"))
            if message["method"] == "session/prompt"
            else None
        )
        if session is not None:
            session.prompts_received += 1

    def _cancel(self, params: object) -> None:
        session = self._session_of(params)
        if session is None:
            return
        if session.turn is not None:
            session.turn.cancel()
        elif session.prompts_received:
            session.cancel_early = True  # the prompt read before it has not started yet

    # -- methods ----------------------------------------------------------------------

    async def _initialize(self, params: Params) -> Any:
        version = params.get("protocolVersion")
        if not isinstance(version, int) or isinstance(version, bool):
            raise RpcError(-32602, "Invalid params: protocolVersion must be an integer")
        self.client = ClientCapabilities.from_params(params)
        if self.settings.slow_start:
            await asyncio.sleep(self.settings.slow_start)
        methods = []
        if self.settings.require_auth is not None:
            methods.append({"id": self.settings.require_auth, "name": "Demo key"})
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": self.settings.load,
                "promptCapabilities": {
                    "image": not self.settings.no_images,
                    "audio": False,
                    "embeddedContext": True,
                },
                "mcpCapabilities": {"http": not self.settings.no_http_mcp, "sse": False},
            },
            "authMethods": methods,
            "agentInfo": AGENT_INFO,
        }

    async def _authenticate(self, params: Params) -> Any:
        method_id = params.get("methodId")
        if self.settings.require_auth is None or method_id != self.settings.require_auth:
            raise RpcError(-32602, f"Invalid params: unknown auth method {method_id!r}")
        self.authenticated = True
        return {}

    def _check_session_params(self, params: Params) -> str:
        if not self.authenticated:
            raise RpcError(-32000, "Authentication required")
        cwd = params.get("cwd")
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise RpcError(-32602, "Invalid params: cwd must be an absolute path")
        if not isinstance(params.get("mcpServers"), list):
            raise RpcError(-32602, "Invalid params: mcpServers must be a list")
        return cwd

    async def _new_session(self, params: Params) -> Any:
        cwd = self._check_session_params(params)
        if self.settings.error_new_session:
            raise RpcError(-32603, "demo failure")
        session = Session(str(uuid.uuid4()), cwd)
        session.mcp_servers = list(params["mcpServers"])
        self.sessions[session.id] = session
        self.store.save(session)
        answer = {"sessionId": session.id, **self._controls_answer(session)}
        await self._announce_commands(answer, params)
        return answer

    async def _load_session(self, params: Params) -> Any:
        if not self.settings.load:
            raise RpcError(-32601, "Method not found")
        cwd = self._check_session_params(params)
        session_id = params.get("sessionId")
        live = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if live is not None and live.turn is not None:
            raise RpcError(-32000, "A prompt is running in this session")
        session = self.store.load(session_id, cwd) if isinstance(session_id, str) else None
        if session is None:
            raise RpcError(-32002, "Resource not found: no such session")
        self.sessions[session.id] = session
        session.mcp_servers = list(params["mcpServers"])
        for entry in session.entries:
            kind = "user_message_chunk" if entry["role"] == "user" else "agent_message_chunk"
            update = {"sessionUpdate": kind, "content": text_block(entry["text"])}
            await self.wire.notify("session/update", {"sessionId": session.id, "update": update})
        await self._announce_commands({}, params)
        return self._controls_answer(session)

    def _controls_answer(self, session: Session) -> JsonObject:
        if self.settings.no_controls:
            return {}
        return controls.session_answer(session.controls, legacy_models=self.settings.legacy_models)

    def _known_session(self, params: Params) -> Session:
        session = self._session_of(params)
        if session is None:
            raise RpcError(-32602, f"Invalid params: unknown session {params.get('sessionId')!r}")
        return session

    async def _set_mode(self, params: Params) -> Any:
        session = self._known_session(params)
        if not session.controls.set_mode(params.get("modeId")):
            raise RpcError(-32602, f"Invalid params: unknown mode {params.get('modeId')!r}")
        update = {"sessionUpdate": "current_mode_update", "currentModeId": session.controls.mode_id}
        await self.wire.notify("session/update", {"sessionId": session.id, "update": update})
        return {}

    async def _set_config_option(self, params: Params) -> Any:
        session = self._known_session(params)
        if self.settings.legacy_models or params.get("configId") != "model":
            raise RpcError(-32602, f"Invalid params: unknown option {params.get('configId')!r}")
        if not session.controls.set_model(params.get("value")):
            raise RpcError(-32602, f"Invalid params: unknown value {params.get('value')!r}")
        return {"configOptions": session.controls.config_options()}

    async def _set_model(self, params: Params) -> Any:
        session = self._known_session(params)
        if not session.controls.set_model(params.get("modelId")):
            raise RpcError(-32602, f"Invalid params: unknown model {params.get('modelId')!r}")
        return {}

    async def _prompt(self, params: Params) -> Any:
        session_id = params.get("sessionId")
        session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            raise RpcError(-32602, f"Invalid params: unknown session {session_id!r}")
        session.prompts_received = max(0, session.prompts_received - 1)
        cancel_early, session.cancel_early = session.cancel_early, False
        prompt = params.get("prompt")
        if not isinstance(prompt, list):
            raise RpcError(-32602, "Invalid params: prompt must be a list of content blocks")
        if session.turn is not None:
            raise RpcError(-32000, "A prompt is already running in this session")
        text = " ".join([prompt_text(prompt), *controls.describe_blocks(prompt)]).strip()
        command = self._command(command_text(prompt))
        if command.ignore_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        turn = Turn(self.wire, session, text, self.client, self.children)
        if self.settings.turn_mode == "garbage":
            turn.start_garbage()
        session.entries.append({"role": "user", "text": text})
        self.store.save(session)
        try:
            async with asyncio.TaskGroup() as tasks:
                body = tasks.create_task(script.run(turn, command))
                session.turn = body
                if cancel_early:
                    body.cancel()
        finally:
            session.turn = None
            if turn.reply:
                session.entries.append({"role": "agent", "text": "".join(turn.reply)})
            self.store.save(session)
        return {"stopReason": "cancelled" if body.cancelled() else body.result()}

    def _command(self, text: str) -> Command:
        """The prompt's command; DEMO_AGENT_MODE=crash or hang overrides it."""
        command = parse_command(text)
        mode = self.settings.turn_mode
        if mode in ("crash", "hang"):
            return Command(mode, ignore_sigterm=command.ignore_sigterm)
        return command
