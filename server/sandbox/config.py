"""Each agent's sandbox additions in ``AGENTS_FILE``: ``[agents.NAME] sandbox = {read =
[paths], write = [paths]}`` and ``network = [hosts]``. ``~`` is the server user's home: a
``~/x`` path is shown at ``x`` in the agent's private home (where the agent looks for it),
an absolute path at itself. The file is read once, with the agents' commands
(``server.sessions.agents.config.load_agents``); each agent's table is parsed here, so
that the sandbox owns its part of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from server.setting_values import host_patterns
from server.settings import SettingsError

__all__ = ["AgentSandbox", "parse_agent"]


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
