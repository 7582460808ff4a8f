"""Each agent's sandbox additions in ``AGENTS_FILE``: ``[agents.NAME] sandbox = {read =
[paths], write = [paths]}`` and ``network = [hosts]``. ``~`` is the server user's home: a
``~/x`` path is shown at ``x`` in the agent's private home (where the agent looks for it),
an absolute path at itself. Read here, apart from the agents' commands, so that the
sandbox owns its part of the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from server.setting_values import host_patterns
from server.settings import Settings, SettingsError, read_agents_file

__all__ = ["AgentSandbox", "load_agent_sandboxes"]


class AgentSandbox(msgspec.Struct, frozen=True):
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    network: tuple[str, ...] = ()  # host patterns the egress proxy lets through


def _paths(name: str, key: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise SettingsError(f"AGENTS_FILE: agents.{name}.sandbox.{key} must be a list of paths")
    for path in value:
        if not (path.startswith("/") or path == "~" or path.startswith("~/")) or "\x00" in path:
            raise SettingsError(
                f"AGENTS_FILE: agents.{name}.sandbox.{key}: {path!r} is neither absolute nor ~/…"
            )
        if ".." in Path(path).parts:
            raise SettingsError(f"AGENTS_FILE: agents.{name}.sandbox.{key}: {path!r} has ..")
    return tuple(value)


def parse_agent(name: str, spec: dict[str, Any]) -> AgentSandbox:
    table = spec.get("sandbox", {})
    if not isinstance(table, dict) or set(table) - {"read", "write"}:
        raise SettingsError(
            f"AGENTS_FILE: agents.{name}.sandbox must be {{read = [...], write = [...]}}"
        )
    network = spec.get("network", [])
    if not isinstance(network, list) or not all(isinstance(h, str) for h in network):
        raise SettingsError(f"AGENTS_FILE: agents.{name}.network must be a list of hosts")
    try:
        hosts = host_patterns(",".join(network))
    except ValueError as exc:
        raise SettingsError(f"AGENTS_FILE: agents.{name}.network: {exc}") from None
    return AgentSandbox(
        _paths(name, "read", table.get("read")), _paths(name, "write", table.get("write")), hosts
    )


def load_agent_sandboxes(settings: Settings) -> dict[str, AgentSandbox]:
    """Agent id -> its additions (agents without any are left out)."""
    if settings.agents_file is None:
        return {}
    data = read_agents_file(settings.agents_file)
    table = data.get("agents", {})
    if not isinstance(table, dict):
        return {}
    return {name: parse_agent(name, spec) for name, spec in table.items() if isinstance(spec, dict)}
