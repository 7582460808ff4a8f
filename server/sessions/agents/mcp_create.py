"""A create request's MCP servers: checked by name before the session exists, and the
session refused (422) when its agent cannot take one of them (``http``/``sse`` without
the matching ``mcpCapabilities``)."""

from __future__ import annotations

from collections.abc import Mapping

from server.sessions.agents.mcp_servers import McpServer, check_names
from server.sessions.errors import Invalid

__all__ = ["create_mcp_names", "mcp_refusal"]


def create_mcp_names(catalog: Mapping[str, McpServer], value: object) -> tuple[str, ...]:
    """``mcpServers`` of a create request: a list of defined names (else 422)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise Invalid("mcpServers must be a list of MCP server names.", field="mcpServers")
    return tuple(check_names(catalog, value))


def mcp_refusal(refused: list[str]) -> Invalid | None:
    """The refusal when the agent started without some of the session's MCP servers (it
    takes no such transport); the caller discards the session (it was never created)."""
    if not refused:
        return None
    return Invalid(
        "The agent does not take these MCP servers' transport (its mcpCapabilities): "
        + ", ".join(refused),
        "mcp_transport_not_supported",
        mcpServers=refused,
    )
