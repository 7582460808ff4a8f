"""The configured agents: ``AGENT_COMMAND`` (id ``default``) plus ``AGENTS_FILE``."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path

import msgspec

from server.sandbox.config import AgentSandbox, parse_agent
from server.sessions.agents.mcp_servers import McpServer, parse_mcp_servers
from server.settings import Settings, SettingsError, read_agents_file

__all__ = ["DEFAULT_AGENT_ID", "AgentConfig", "load_agents"]

DEFAULT_AGENT_ID = "default"


class AgentConfig(msgspec.Struct, frozen=True):
    id: str
    command: str
    env: dict[str, str] = msgspec.field(default_factory=dict)
    auth_method: str | None = None
    default: bool = False
    mcp_servers: tuple[str, ...] = ()  # the agent's default MCP servers, by name
    # Every MCP server AGENTS_FILE defines (the same mapping for every agent).
    mcp_catalog: Mapping[str, McpServer] = msgspec.field(default_factory=dict)
    # Its sandbox additions (``[agents.NAME] sandbox`` and ``network``), parsed by the sandbox.
    sandbox: AgentSandbox = AgentSandbox()

    def __repr__(self) -> str:
        # the environment's values may be keys: its names only; the catalog is every agent's
        return (
            f"AgentConfig(id={self.id!r}, command={self.command!r}, env={sorted(self.env)!r}, "
            f"auth_method={self.auth_method!r}, default={self.default!r}, "
            f"mcp_servers={self.mcp_servers!r}, sandbox={self.sandbox!r})"
        )

    def argv(self, workspace: Path) -> list[str]:
        """The command line, with ``{workspace}`` replaced by the repository path."""
        return [part.replace("{workspace}", str(workspace)) for part in shlex.split(self.command)]

    def view(self) -> dict[str, object]:
        return {
            "id": self.id,
            "command": self.command,
            "default": self.default,
            "mcpServers": list(self.mcp_servers),
        }


def load_agents(settings: Settings) -> dict[str, AgentConfig]:
    agents = {DEFAULT_AGENT_ID: AgentConfig(DEFAULT_AGENT_ID, settings.agent_command, default=True)}
    if settings.agents_file is None:
        return agents
    data = read_agents_file(settings.agents_file)
    catalog = parse_mcp_servers(data)
    agents[DEFAULT_AGENT_ID] = AgentConfig(
        DEFAULT_AGENT_ID, settings.agent_command, default=True, mcp_catalog=catalog
    )
    table = data.get("agents", {})
    if not isinstance(table, dict):
        raise SettingsError("AGENTS_FILE: [agents] must be a table")
    for name, spec in table.items():
        if (
            not isinstance(spec, dict)
            or not isinstance(spec.get("command"), str)
            or not spec["command"].strip()
        ):
            raise SettingsError(f'AGENTS_FILE: agents.{name} needs command = "..."')
        env = spec.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise SettingsError(f"AGENTS_FILE: agents.{name}.env must map names to strings")
        auth = spec.get("authMethod")
        if auth is not None and not isinstance(auth, str):
            raise SettingsError(f"AGENTS_FILE: agents.{name}.authMethod must be a string")
        mcp = spec.get("mcpServers", [])
        if not isinstance(mcp, list) or not all(isinstance(n, str) for n in mcp):
            raise SettingsError(f"AGENTS_FILE: agents.{name}.mcpServers must be a list of names")
        unknown = [n for n in mcp if n not in catalog]
        if unknown:
            raise SettingsError(
                f"AGENTS_FILE: agents.{name}.mcpServers names undefined {', '.join(unknown)}"
            )
        agents[name] = AgentConfig(
            name,
            spec["command"],
            dict(env),
            auth,
            default=False,
            mcp_servers=tuple(dict.fromkeys(mcp)),
            mcp_catalog=catalog,
            sandbox=parse_agent(name, spec),
        )
    return agents
