"""The MCP server the server itself hosts for a session's agent (API.md "Client tools"):
MCP's streamable HTTP transport, the part of it a tool server needs, on our own
JSON-RPC core (``agent_bridge.jsonrpc``)."""

from server.mcp_host.endpoint import ToolHost, mcp_route
from server.mcp_host.protocol import LATEST_VERSION, SUPPORTED_VERSIONS, negotiate
from server.mcp_host.sessions import McpSession, McpSessions

__all__ = [
    "LATEST_VERSION",
    "SUPPORTED_VERSIONS",
    "McpSession",
    "McpSessions",
    "ToolHost",
    "mcp_route",
    "negotiate",
]
