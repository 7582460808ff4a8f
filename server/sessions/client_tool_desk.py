"""What the web layer asks of client tools (API.md "Client tools"): read and replace a
session's set, answer a call, find the tool server of a session's agent, and end the
calls a dead server left waiting. Routes parse, call one of these, render."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from agent_bridge.jsontypes import JsonObject
from server.sessions.client_tools import (
    Answer,
    ClientToolHost,
    already_answered,
    call_not_found,
    tools_of,
)
from server.stream.writer import Draft
from store import SessionRecord
from store import client_tools as call_store
from store import sessions as session_store

if TYPE_CHECKING:
    from server.sessions.hub import Hub

__all__ = [
    "answer_call",
    "find_host",
    "get_tools",
    "recover_calls",
    "set_tools",
    "store_first_tools",
]

log = logging.getLogger("agent_sessions.client_tools")


async def get_tools(hub: Hub, session_id: str) -> list[JsonObject]:
    return tools_of((await hub.get_record(session_id)).client_tools)


async def store_first_tools(
    hub: Hub, record: SessionRecord, tools: list[JsonObject]
) -> SessionRecord:
    """``clientTools`` of a create request, stored before its agent starts."""
    async with hub.db.write() as db, db.begin():
        await session_store.update_session(db, record.id, client_tools=tools or None)
    return await hub.get_record(record.id)


async def set_tools(hub: Hub, session_id: str, tools: list[JsonObject]) -> list[JsonObject]:
    """Store the set and hand it to the running agent: announced on its MCP sessions
    when the server was offered to it; otherwise an idle agent that can take HTTP MCP
    and restore its own session is stopped, so that its next start (on the next prompt,
    with ``session/load`` or ``session/resume``) is offered the server."""
    await hub.get_record(session_id)
    async with hub.db.write() as db, db.begin():
        await session_store.update_session(db, session_id, client_tools=tools or None)
    live = hub.live.get(session_id)
    if live is None or live.stopping:
        return tools
    host: ClientToolHost = live.client_tools
    if host.offered or not tools:
        host.set_tools(tools)
        return tools
    host.tools = tools
    client = live.client
    caps = client.agent_capabilities.get("mcpCapabilities")
    restorable = client.can_load or client.can_resume
    if isinstance(caps, dict) and caps.get("http") is True and restorable and live.turn is None:
        log.info("agent restarted to be offered its client tools", extra={"session_id": session_id})
        await live.stop("cancelled")
    return tools


async def answer_call(
    hub: Hub, session_id: str, call_id: str, answer: Answer, by: JsonObject
) -> None:
    """The first answer wins: a call no longer waiting is 409 if it was ever asked in
    this session, else 404."""
    await hub.get_record(session_id)
    live = hub.live.get(session_id)
    if live is not None and call_id in live.client_tools.calls:
        await live.client_tools.answer(call_id, answer, by).wait()
        return
    async with hub.db.read() as db:
        asked = await call_store.asked_call(db, session_id, call_id)
    raise already_answered() if asked else call_not_found(call_id)


def find_host(hub: Hub, session_id: str) -> ClientToolHost | None:
    """The tool server of the session's running agent, if it was offered one."""
    live = hub.live.get(session_id)
    if live is None or not live.client_tools.offered:
        return None
    return live.client_tools


async def recover_calls(hub: Hub, only: set[str] | None = None) -> int:
    """At start: the calls a dead server left waiting end ``server_restarted`` (their
    agent is gone with it). Returns how many."""
    async with hub.db.read() as db:
        pending = await call_store.pending_calls(db, None)
        pending = [m for m in pending if only is None or m.session_id in only]
        records = {
            sid: await session_store.get_session(db, sid) for sid in {m.session_id for m in pending}
        }
    for sid, record in records.items():
        if record is not None:
            hub.writer.open_session(sid, record.last_seq)
    for message in pending:
        content = {**message.content, "outcome": "server_restarted", "isError": True, "by": None}
        hub.writer.submit(message.session_id, [Draft("system", content, run_id=message.run_id)])
    await hub.writer.submit(None).wait()
    if pending:
        log.warning(
            "client tool calls ended by a restart",
            extra={"event": "recovered", "client_tool_calls": len(pending)},
        )
    return len(pending)
