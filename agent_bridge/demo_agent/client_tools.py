"""The demo agent's use of client tools: ``client-tools`` lists those of the
``client-tools`` MCP server that session/new offered, ``client-tool NAME {json}`` calls
one (shown as a tool call) and reports its answer, so the feature works with no model."""

from __future__ import annotations

import json
from typing import Any

from .mcp_client import McpError, McpHttpClient, http_server
from .turn import Turn

__all__ = ["SERVER_NAME", "client_tool_body"]

SERVER_NAME = "client-tools"


def _text(result: dict[str, Any]) -> str:
    blocks = result.get("content")
    texts = (
        [
            b["text"]
            for b in blocks
            if isinstance(blocks, list)
            if isinstance(b, dict) and isinstance(b.get("text"), str)
        ]
        if isinstance(blocks, list)
        else []
    )
    return " ".join(texts) if texts else json.dumps(result.get("structuredContent"))


async def client_tool_body(turn: Turn, name: str | None, argument: str) -> list[str]:
    server = http_server(turn.session.mcp_servers, SERVER_NAME)
    if server is None:
        return ["No client tools were offered to me."]
    try:
        arguments = json.loads(argument) if argument.strip() else {}
    except ValueError:
        return [f"The input is not JSON: {argument}"]
    client = McpHttpClient(server)
    try:
        await client.initialize()
        tools = await client.list_tools()
        if name is None:
            names = ", ".join(str(t.get("name")) for t in tools) or "none"
            return [f"Client tools: {names}."]
        await turn.tool_call(
            "client_tool_1",
            f"Client tool {name}",
            "other",
            status="in_progress",
            rawInput=arguments,
        )
        result = await client.call_tool(name, arguments)
    except McpError as exc:
        return [f"The client tools server refused: {exc}"]
    failed = result.get("isError") is True
    await turn.tool_update(
        "client_tool_1", status="failed" if failed else "completed", rawOutput=result
    )
    return [f"{name} {'failed' if failed else 'answered'}: {_text(result)}"]
