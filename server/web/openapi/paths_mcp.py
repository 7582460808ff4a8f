"""OpenAPI entries of API.md "Agent controls", MCP servers: ``GET /api/mcp-servers``,
``Agent.mcpServers`` (create's ``mcpServers`` is in ``shapes.CreateSession``).
``mcp_paths`` amends the shared shapes and returns the new operation. No schema carries
an ``env`` or ``headers`` value."""

from __future__ import annotations

from typing import Any

from server.web.openapi.parts import json_response, op
from server.web.openapi.schemas import Schema, closed, ref

__all__ = ["mcp_paths"]


def mcp_paths(
    catalogue: dict[tuple[str, str], Any], schemas: dict[str, Schema]
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
