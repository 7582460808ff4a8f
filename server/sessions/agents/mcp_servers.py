"""MCP servers the administrator defines in ``AGENTS_FILE`` (``[mcpServers.NAME]``): stdio
ones (``command``, ``args``, ``env``) or ``http``/``sse`` ones (``url``, ``headers``).

An agent gets its defaults (``[agents.NAME] mcpServers = [names]``) plus what a session
adds by name. Their ``env`` and ``headers`` values are secrets: they go to the agent in
``session/new``/``load``/``resume`` and nowhere else (not in a view, a repr or a log).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

import msgspec

from agent_bridge import acp_types
from server.sessions.errors import Invalid
from server.settings import SettingsError

__all__ = [
    "McpServer",
    "check_names",
    "parse_mcp_servers",
    "session_servers",
    "transport_allowed",
]

Transport = Literal["stdio", "http", "sse"]


class McpServer(msgspec.Struct, frozen=True):
    name: str
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = ()
    url: str = ""
    # Secrets: kept out of repr (so out of any log line that formats the server).
    env: Mapping[str, str] = msgspec.field(default_factory=dict)
    headers: Mapping[str, str] = msgspec.field(default_factory=dict)

    def __repr__(self) -> str:
        return (
            f"McpServer(name={self.name!r}, transport={self.transport!r}, "
            f"command={self.command!r}, args={self.args!r}, url={self.url!r})"
        )

    def view(self) -> dict[str, str]:
        return {"name": self.name, "transport": self.transport}

    def acp(self) -> acp_types.McpServer:
        """The ``McpServer`` of ACP's ``mcpServers``."""
        if self.transport == "stdio":
            return {
                "name": self.name,
                "command": self.command,
                "args": list(self.args),
                "env": [{"name": k, "value": v} for k, v in self.env.items()],
            }
        return {
            "type": self.transport,
            "name": self.name,
            "url": self.url,
            "headers": [{"name": k, "value": v} for k, v in self.headers.items()],
        }


def _strings(value: object, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise SettingsError(f"AGENTS_FILE: {where} must map names to strings")
    return dict(value)


def _server(name: str, spec: object) -> McpServer:
    where = f"mcpServers.{name}"
    if not isinstance(spec, dict):
        raise SettingsError(f"AGENTS_FILE: {where} must be a table")
    command, url = spec.get("command"), spec.get("url")
    if isinstance(command, str) and command.strip() and url is None:
        args = spec.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise SettingsError(f"AGENTS_FILE: {where}.args must be a list of strings")
        if "headers" in spec or "type" in spec and spec["type"] != "stdio":
            raise SettingsError(f"AGENTS_FILE: {where} is stdio (command): no type or headers")
        env = _strings(spec.get("env", {}), f"{where}.env")
        return McpServer(name, "stdio", command=command, args=tuple(args), env=env)
    if isinstance(url, str) and url.strip() and command is None:
        transport = spec.get("type", "http")
        if transport not in ("http", "sse"):
            raise SettingsError(f'AGENTS_FILE: {where}.type must be "http" or "sse"')
        if "env" in spec or "args" in spec:
            raise SettingsError(f"AGENTS_FILE: {where} is {transport} (url): no env or args")
        headers = _strings(spec.get("headers", {}), f"{where}.headers")
        return McpServer(name, transport, url=url, headers=headers)
    raise SettingsError(f'AGENTS_FILE: {where} needs command = "..." or url = "..." (not both)')


def parse_mcp_servers(data: Mapping[str, Any]) -> dict[str, McpServer]:
    """The ``[mcpServers]`` table of the agents file."""
    table = data.get("mcpServers", {})
    if not isinstance(table, dict):
        raise SettingsError("AGENTS_FILE: [mcpServers] must be a table")
    return {name: _server(name, spec) for name, spec in table.items()}


def check_names(catalog: Mapping[str, McpServer], names: Iterable[str]) -> list[str]:
    """Names a client asked for, each defined (else 422 ``mcp_server_not_found``)."""
    result: list[str] = []
    for name in names:
        if name not in catalog:
            raise Invalid(
                f"No MCP server named {name!r} is defined in AGENTS_FILE.",
                "mcp_server_not_found",
                name=name,
            )
        if name not in result:
            result.append(name)
    return result


def session_servers(
    catalog: Mapping[str, McpServer], defaults: Iterable[str], added: Iterable[str]
) -> list[McpServer]:
    """The agent's defaults then the session's additions, once each; a name no longer
    defined (the file changed since) is left out."""
    seen: dict[str, McpServer] = {}
    for name in [*defaults, *added]:
        if name in catalog and name not in seen:
            seen[name] = catalog[name]
    return list(seen.values())


def transport_allowed(server: McpServer, agent_capabilities: Mapping[str, Any]) -> bool:
    """stdio always; ``http``/``sse`` only where ``mcpCapabilities`` say so."""
    if server.transport == "stdio":
        return True
    caps = agent_capabilities.get("mcpCapabilities")
    return isinstance(caps, dict) and caps.get(server.transport) is True
