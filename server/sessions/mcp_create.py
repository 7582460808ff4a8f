"""A create request's MCP servers: checked by name before the session exists, and the
session discarded (422) when its agent cannot take one of them (``http``/``sse`` without
the matching ``mcpCapabilities``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio

from server.sessions.errors import Invalid
from server.sessions.mcp_servers import McpServer, check_names
from server.sessions.status import log_active_count
from store import sessions as session_store

if TYPE_CHECKING:
    from server.sessions.live_session import LiveSession

__all__ = ["create_mcp_names", "refuse_unsupported_mcp"]

log = logging.getLogger("agent_sessions.sessions")


def create_mcp_names(catalog: Mapping[str, McpServer], value: object) -> tuple[str, ...]:
    """``mcpServers`` of a create request: a list of defined names (else 422)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise Invalid("mcpServers must be a list of MCP server names.", field="mcpServers")
    return tuple(check_names(catalog, value))


async def refuse_unsupported_mcp(live: LiveSession) -> None:
    """The agent started without some of the session's MCP servers (it takes no such
    transport): stop it and delete the session, it was never created (422)."""
    if not live.mcp_refused:
        return
    refused = list(live.mcp_refused)
    with anyio.CancelScope(shield=True):
        await live.stop("cancelled")

        async def delete(db: Any) -> None:
            await session_store.delete_session(db, live.id)

        await live.services.writer.submit(None, (), [delete]).wait()
        await log_active_count(live.services, "session refused: MCP servers", live.id)
    raise Invalid(
        "The agent does not take these MCP servers' transport (its mcpCapabilities): "
        + ", ".join(refused),
        "mcp_transport_not_supported",
        mcpServers=refused,
    )
