"""A small MCP client over streamable HTTP (the demo agent's side of client tools):
``initialize``, ``notifications/initialized``, ``tools/list`` and ``tools/call`` on an
``http`` MCP server of ``session/new``, with the standard library only (the agent is a
subprocess; no third-party HTTP stack). A ``tools/call`` can wait minutes for a person:
the calls run in a thread, and an answer sent as an event stream is read to its
``message`` event (keep-alive comment lines skipped)."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any

__all__ = ["McpError", "McpHttpClient", "http_server"]

PROTOCOL_VERSION = "2025-06-18"
CALL_TIMEOUT = 3600.0  # the server ends a call itself (CLIENT_TOOL_TIMEOUT)


class McpError(Exception):
    """The server refused (an HTTP status or a JSON-RPC error)."""


def http_server(servers: object, name: str) -> dict[str, Any] | None:
    """The ``http`` MCP server ``name`` of session/new's ``mcpServers``."""
    for server in servers if isinstance(servers, list) else []:
        if isinstance(server, dict) and server.get("type") == "http" and server.get("name") == name:
            return server
    return None


class McpHttpClient:
    def __init__(self, server: dict[str, Any]) -> None:
        self.url = str(server["url"])
        self.headers = {
            str(h["name"]): str(h["value"])
            for h in server.get("headers") or []
            if isinstance(h, dict) and "name" in h and "value" in h
        }
        self.session_id: str | None = None
        self.protocol_version = PROTOCOL_VERSION
        self._next_id = 1

    async def initialize(self) -> dict[str, Any]:
        result = await self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "demo-agent", "version": "1"},
            },
        )
        self.protocol_version = str(result.get("protocolVersion", PROTOCOL_VERSION))
        await self.notify("notifications/initialized")
        return result

    async def list_tools(self) -> list[dict[str, Any]]:
        result = await self.request("tools/list", {})
        tools = result.get("tools")
        return [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []

    async def call_tool(self, name: str, arguments: Any) -> dict[str, Any]:
        return await self.request("tools/call", {"name": name, "arguments": arguments})

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        message = {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}
        self._next_id += 1
        answer = await asyncio.to_thread(self._post, message)
        if not isinstance(answer, dict):
            raise McpError(f"{method}: no answer")
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            raise McpError(f"{method}: {error.get('message', 'error')}")
        result = answer.get("result")
        return result if isinstance(result, dict) else {}

    async def notify(self, method: str) -> None:
        await asyncio.to_thread(self._post, {"jsonrpc": "2.0", "method": method})

    def _post(self, message: dict[str, Any]) -> Any:
        headers = {
            **self.headers,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
            headers["MCP-Protocol-Version"] = self.protocol_version
        request = urllib.request.Request(  # noqa: S310 - the URL session/new gave us
            self.url, json.dumps(message).encode(), headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=CALL_TIMEOUT) as response:  # noqa: S310
                session_id = response.headers.get("Mcp-Session-Id")
                if session_id:
                    self.session_id = session_id
                if response.status == 202:
                    return None
                if "text/event-stream" in response.headers.get("Content-Type", ""):
                    return _first_event(response)
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise McpError(f"HTTP {exc.code}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise McpError(f"unreachable: {exc}") from None


def _first_event(response: Any) -> Any:
    """The JSON of the stream's first ``message`` event."""
    data: list[str] = []
    for raw in response:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
        elif not line and data:
            return json.loads("\n".join(data))
    return json.loads("\n".join(data)) if data else None
