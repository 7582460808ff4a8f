"""The demo agent's settings, read once from the environment at start."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["ConfigError", "Settings", "TURN_MODES"]

# DEMO_AGENT_MODE entries that make every prompt behave as that prompt command.
TURN_MODES = ("crash", "hang", "garbage")
_START_MODES = (
    "fail-start",
    "error-new-session",
    "ignore-sigterm",
    "legacy-models",
    "no-controls",
    "no-images",
    "no-http-mcp",
)


class ConfigError(ValueError):
    """A bad environment value; the message is one line for stderr."""


@dataclass(frozen=True)
class Settings:
    require_auth: str | None = None
    """DEMO_AGENT_REQUIRE_AUTH: the auth method id that must be used before session/new."""
    load: bool = False
    """DEMO_AGENT_LOAD=1: advertise loadSession and keep histories on disk."""
    state_dir: str | None = None
    """DEMO_AGENT_STATE_DIR: where histories live (required when load is on)."""
    slow_start: float = 0.0
    """DEMO_AGENT_MODE slow-start:S: seconds to wait before answering initialize."""
    fail_start: bool = False
    error_new_session: bool = False
    ignore_sigterm: bool = False
    legacy_models: bool = False
    """DEMO_AGENT_MODE legacy-models: the model as the older ``models`` block."""
    no_controls: bool = False
    """DEMO_AGENT_MODE no-controls: no modes, no config options (as older agents)."""
    no_images: bool = False
    no_http_mcp: bool = False
    """DEMO_AGENT_MODE no-http-mcp: mcpCapabilities.http false (no client tools offered)."""
    """DEMO_AGENT_MODE no-images: promptCapabilities.image false."""
    turn_mode: str | None = None
    """One of TURN_MODES: applied to every prompt."""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        require_auth = env.get("DEMO_AGENT_REQUIRE_AUTH") or None
        load_text = env.get("DEMO_AGENT_LOAD", "")
        if load_text not in ("", "0", "1"):
            raise ConfigError(f"DEMO_AGENT_LOAD must be 0 or 1, not {load_text!r}")
        load = load_text == "1"
        state_dir = env.get("DEMO_AGENT_STATE_DIR") or None
        if load and state_dir is None:
            raise ConfigError("DEMO_AGENT_STATE_DIR is required when DEMO_AGENT_LOAD=1")
        if state_dir is not None and not os.path.isabs(state_dir):
            raise ConfigError(f"DEMO_AGENT_STATE_DIR must be absolute, not {state_dir!r}")
        slow_start = 0.0
        flags: set[str] = set()
        turn_mode: str | None = None
        for entry in env.get("DEMO_AGENT_MODE", "").split(","):
            entry = entry.strip()
            name, _, arg = entry.partition(":")
            if not entry:
                continue
            if name == "slow-start":
                slow_start = _seconds(arg)
            elif name in _START_MODES and not arg:
                flags.add(name)
            elif name in TURN_MODES and not arg and turn_mode in (None, name):
                turn_mode = name
            elif name in TURN_MODES and not arg:
                raise ConfigError("DEMO_AGENT_MODE names more than one of crash, hang, garbage")
            else:
                raise ConfigError(f"DEMO_AGENT_MODE has an unknown entry {entry!r}")
        return cls(
            require_auth=require_auth,
            load=load,
            state_dir=state_dir,
            slow_start=slow_start,
            fail_start="fail-start" in flags,
            error_new_session="error-new-session" in flags,
            ignore_sigterm="ignore-sigterm" in flags,
            legacy_models="legacy-models" in flags,
            no_controls="no-controls" in flags,
            no_images="no-images" in flags,
            no_http_mcp="no-http-mcp" in flags,
            turn_mode=turn_mode,
        )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"slow-start needs a number of seconds >= 0, not {text!r}")
    return value
