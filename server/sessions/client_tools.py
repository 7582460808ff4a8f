"""What the web asks of a session's client tools (``sessions.client_tools``, API.md
"Client tools"): the set a page or script offers, checked, stored and handed to the
running agent; a client's answer to a call the agent made; and the tool server the MCP
endpoint serves for the running agent."""

from __future__ import annotations

import logging

from agent_bridge.jsontypes import JsonObject
from server.sessions import answers
from server.sessions.live.client_tools import ClientToolHost, answer_of, check_tools, tools_of
from server.sessions.records import get_record
from server.sessions.services import Services
from server.sessions.supervision.registry import Registry
from store.operations import SetClientTools

__all__ = ["ClientTools"]

log = logging.getLogger("agent_sessions.sessions")


class ClientTools:
    """Given the services and the registry of live sessions (whose agents it tells)."""

    def __init__(self, services: Services, registry: Registry) -> None:
        self.services = services
        self.registry = registry

    def check(self, value: object) -> list[JsonObject]:
        """A client's tool set (``tools`` of PUT, ``clientTools`` of create), checked."""
        return check_tools(value)

    async def of(self, session_id: str) -> list[JsonObject]:
        """The session's stored set."""
        return tools_of((await get_record(self.services.db, session_id)).client_tools)

    async def replace(self, session_id: str, value: object) -> list[JsonObject]:
        """Check and store the set, and hand it to the running agent: announced on its
        MCP sessions when the server was offered to it; otherwise an idle agent that can
        take HTTP MCP and restore its own session is stopped, so that its next start (on
        the next prompt, with ``session/load`` or ``session/resume``) is offered it."""
        tools = check_tools(value)
        await get_record(self.services.db, session_id)
        writer = self.services.writer
        await writer.submit(None, (), [SetClientTools(session_id, tools or None)]).wait()
        async with self.registry.lock(session_id):  # no agent starts meanwhile
            live = self.registry.get(session_id)
            if live is None or live.stopping:
                return tools
            if live.client_tools.replace(tools, live.client, live.turn is not None):
                log.info(
                    "agent restarted to be offered its client tools",
                    extra={"session_id": session_id},
                )
                await live.stop("cancelled")
        return tools

    async def answer(self, session_id: str, call_id: str, body: JsonObject, by: JsonObject) -> None:
        """A client's answer (``{result?, content?, isError?}``, checked) to a call; the
        first answer wins."""
        answer = answer_of(body, self.services.settings.max_client_tool_result_bytes)
        await answers.answer_client_tool(
            self.services.db, self.registry, session_id, call_id, answer, by
        )

    def host(self, session_id: str) -> ClientToolHost | None:
        """The tool server of the session's running agent, if it was offered one (what
        the MCP endpoint serves)."""
        live = self.registry.get(session_id)
        if live is None or not live.client_tools.offered:
            return None
        return live.client_tools
