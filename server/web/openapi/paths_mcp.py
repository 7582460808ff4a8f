"""OpenAPI entries of API.md "Agent controls", MCP servers: ``GET /api/mcp-servers``,
``Agent.mcpServers`` and create's ``mcpServers``. ``mcp_paths`` amends the shared shapes
and returns the new operation. No schema carries an ``env`` or ``headers`` value."""

from __future__ import annotations

from typing import Any

from server.web.openapi.parts import json_response, op
from server.web.openapi.schemas import NONBLANK, closed, nullable, ref

__all__ = ["mcp_paths"]


def mcp_paths(
    catalogue: dict[tuple[str, str], Any], schemas: dict[str, Any]
) -> dict[tuple[str, str], Any]:
    names = {"type": "array", "items": {"type": "string"}}
    agent = schemas["Agent"]
    agent["properties"]["mcpServers"] = {
        **names,
        "description": "The agent's default MCP servers (AGENTS_FILE), by name.",
    }
    agent["required"].append("mcpServers")
    schemas["McpServer"] = closed(
        ["name", "transport"],
        name={"type": "string"},
        transport={"enum": ["stdio", "http", "sse"]},
    )
    create = catalogue[("POST", "/api/sessions")]["requestBody"]["content"]["application/json"]
    create["schema"]["properties"]["mcpServers"] = nullable(
        {
            "type": "array",
            "items": NONBLANK,
            "description": "MCP servers (AGENTS_FILE) to add to the agent's defaults, by name;"
            " 422 mcp_server_not_found for an unknown one, 422 mcp_transport_not_supported"
            " for an http/sse one the agent's mcpCapabilities do not allow.",
        }
    )
    return {
        ("GET", "/api/mcp-servers"): op(
            "The MCP servers AGENTS_FILE defines (never their env or headers)",
            {
                200: json_response(
                    "Each server's name and transport.",
                    closed(["mcpServers"], mcpServers={"type": "array", "items": ref("McpServer")}),
                )
            },
        )
    }
