"""A scripted ACP agent built on the official Python SDK (PyPI ``agent-client-protocol``,
module ``acp``), which ships no runnable example agent. Everything on the wire is the SDK's
own: framing, JSON-RPC ids (its requests start at 0), pydantic serialization (aliases,
``exclude_none``/``exclude_defaults``), dispatch and cancellation.

Prompt texts:
- ``full``: a thought in two chunks; a plan; two agent messages told apart only by
  ``messageId``; tool ``t1`` (read) pending → in_progress → completed; tool ``t2``
  (execute) with a permission request (``proceed_once``/``abort``/``always``) → completed
  or failed by the answer; ``usage_update`` with cost; ``session_info_update`` (title);
  a last text; ``end_turn`` with the unstable ``usage`` in the prompt result.
- ``wait``: a text and tool ``w1`` in progress, then nothing until ``session/cancel``;
  then ``w1`` failed and ``stopReason: cancelled``.
- ``client``: the client methods, through the SDK's requests: ``fs/read_text_file`` (line 2,
  limit 1) and ``fs/write_text_file`` inside the session's cwd, a read outside it (its
  error reported), and a terminal (``terminal/create`` → ``wait_for_exit`` → ``output`` →
  ``release``); one text line per result.
- anything else: "echo: <text>" and ``end_turn``.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    Agent,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    plan_entry,
    run_agent,
    start_read_tool_call,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    Cost,
    Implementation,
    PermissionOption,
    SessionInfoUpdate,
    ToolCallUpdate,
    Usage,
    UsageUpdate,
)

CANCEL_WAIT = 30.0


def message(text: str, message_id: str) -> Any:
    update = update_agent_message(text_block(text))
    update.message_id = message_id
    return update


class ScriptedAgent(Agent):
    def __init__(self) -> None:
        self._conn: Client | None = None
        self._cancelled: dict[str, asyncio.Event] = {}
        self._cwd: dict[str, Path] = {}

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(load_session=False),
            agent_info=Implementation(name="sdk-scripted-agent", version="0.1.0"),
        )

    async def new_session(
        self, cwd: str, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        session_id = f"sdk-{uuid.uuid4()}"
        self._cwd[session_id] = Path(cwd)
        self._cancelled[session_id] = asyncio.Event()
        return NewSessionResponse(session_id=session_id)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        if session_id in self._cancelled:
            self._cancelled[session_id].set()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        assert self._conn is not None
        cancelled = self._cancelled[session_id] = asyncio.Event()
        text = " ".join(getattr(block, "text", "") for block in prompt).strip()
        send = self._conn.session_update
        if text == "full":
            return await self._full(session_id)
        if text == "client":
            return await self._client(session_id)
        if text == "wait":
            await send(session_id, message("waiting for a cancel", "w-msg"))
            await send(
                session_id,
                start_tool_call(
                    "w1",
                    "Long job",
                    kind="execute",
                    status="in_progress",
                    raw_input={"command": "sleep 1000"},
                ),
            )
            try:
                await asyncio.wait_for(cancelled.wait(), CANCEL_WAIT)
            except TimeoutError:
                return PromptResponse(stop_reason="end_turn")
            await send(
                session_id,
                update_tool_call("w1", status="failed", raw_output={"error": "cancelled"}),
            )
            return PromptResponse(stop_reason="cancelled")
        await send(session_id, message(f"echo: {text}", "e-msg"))
        return PromptResponse(stop_reason="end_turn")

    async def _full(self, session_id: str) -> PromptResponse:
        assert self._conn is not None
        send = self._conn.session_update
        await send(session_id, update_agent_thought_text("Thinking "))
        await send(session_id, update_agent_thought_text("hard"))
        await send(
            session_id,
            update_plan(
                [
                    plan_entry("read", priority="high", status="in_progress"),
                    plan_entry("run", status="pending"),
                ]
            ),
        )
        await send(session_id, message("Part ", "m1"))
        await send(session_id, message("one", "m1"))
        await send(session_id, message("Part two", "m2"))
        await send(session_id, start_read_tool_call("t1", "Read README.md", "README.md"))
        await send(session_id, update_tool_call("t1", status="in_progress"))
        await send(
            session_id,
            update_tool_call(
                "t1",
                status="completed",
                content=[tool_content(text_block("# Demo"))],
                raw_output={"bytes": 6},
            ),
        )
        await send(
            session_id,
            start_tool_call(
                "t2", "Run tests", kind="execute", status="pending", raw_input={"command": "pytest"}
            ),
        )
        answer = await self._conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(
                tool_call_id="t2", title="Run tests", kind="execute", status="pending"
            ),
            options=[
                PermissionOption(option_id="proceed_once", name="Run once", kind="allow_once"),
                PermissionOption(option_id="abort", name="Do not run", kind="reject_once"),
                PermissionOption(option_id="always", name="Always run", kind="allow_always"),
            ],
        )
        outcome = answer.outcome
        allowed = (
            getattr(outcome, "outcome", None) == "selected"
            and getattr(outcome, "option_id", None) != "abort"
        )
        if allowed:
            await send(session_id, update_tool_call("t2", status="in_progress"))
            await send(
                session_id, update_tool_call("t2", status="completed", raw_output={"exitCode": 0})
            )
        else:
            await send(
                session_id,
                update_tool_call("t2", status="failed", raw_output={"error": "rejected"}),
            )
        await send(
            session_id,
            UsageUpdate(
                session_update="usage_update",
                used=1200,
                size=200000,
                cost=Cost(amount=0.25, currency="USD"),
            ),
        )
        await send(
            session_id,
            SessionInfoUpdate(session_update="session_info_update", title="SDK scripted session"),
        )
        await send(session_id, message("Done." if allowed else "Skipped.", "m3"))
        return PromptResponse(
            stop_reason="end_turn", usage=Usage(total_tokens=30, input_tokens=20, output_tokens=10)
        )

    async def _client(self, session_id: str) -> PromptResponse:
        assert self._conn is not None
        conn, cwd = self._conn, self._cwd[session_id]
        lines = []
        read = await conn.read_text_file(
            session_id=session_id, path=str(cwd / "README.md"), line=2, limit=1
        )
        lines.append(f"read: {read.content!r}")
        await conn.write_text_file(
            session_id=session_id,
            path=str(cwd / "notes" / "sdk.txt"),
            content="written by the SDK\n",
        )
        lines.append("write: ok")
        try:
            await conn.read_text_file(session_id=session_id, path="/etc/hostname")
            lines.append("outside: read")
        except RequestError as exc:
            lines.append(f"outside: error {exc.code}")
        terminal = await conn.create_terminal(
            session_id=session_id,
            command="sh",
            args=["-c", "echo out; exit 3"],
            cwd=str(cwd),
            output_byte_limit=1000,
        )
        exit_status = await conn.wait_for_terminal_exit(
            session_id=session_id, terminal_id=terminal.terminal_id
        )
        output = await conn.terminal_output(session_id=session_id, terminal_id=terminal.terminal_id)
        await conn.release_terminal(session_id=session_id, terminal_id=terminal.terminal_id)
        code, out, cut = exit_status.exit_code, output.output, output.truncated
        lines.append(f"terminal: exit {code} output {out!r} truncated {cut}")
        await conn.session_update(session_id, message("\n".join(lines), "c-msg"))
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(ScriptedAgent()))
