"""Typed settings from the environment and an optional ``.env`` file.

Every variable of API.md's configuration table is a field here; a bad value raises
``SettingsError`` with one clear line, and the server refuses to start.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shlex
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from server.setting_values import (
    async_database_url,
    cores,
    host_names,
    host_patterns,
    limit,
    origins,
    size,
)

__all__ = [
    "CLEANUP_SECONDS",
    "DEMO_AGENT_COMMAND",
    "Settings",
    "SettingsError",
    "load_settings",
    "read_agents_file",
]

# A shielded cleanup (a status commit, a lease release, closing an agent's terminals or a
# connection) runs through cancellation, but not forever: a hung database or agent must not
# make shutdown or a request hang. Generous: a healthy cleanup takes milliseconds.
CLEANUP_SECONDS = 15.0

DEMO_AGENT_COMMAND = f"{shlex.quote(sys.executable)} -m agent_bridge.demo_agent"


class SettingsError(ValueError):
    """A configuration value is invalid; the message is one line naming the variable."""


def _int(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:
            raise ValueError("must be a whole number") from None
        if value < minimum:
            raise ValueError(f"must be at least {minimum}")
        if maximum is not None and value > maximum:
            raise ValueError(f"must be at most {maximum}")
        return value

    return parse


def _float(minimum: float) -> Callable[[str], float]:
    def parse(raw: str) -> float:
        try:
            value = float(raw.strip())
        except ValueError:
            raise ValueError("must be a number") from None
        if not minimum <= value < float("inf"):
            raise ValueError(f"must be a number of at least {minimum}")
        return value

    return parse


def _bool(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("must be true or false")


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        value = raw.strip().lower()
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return value

    return parse


def _optional_int(minimum: int) -> Callable[[str], int | None]:
    whole = _int(minimum)

    def parse(raw: str) -> int | None:
        return whole(raw) if raw.strip() else None

    return parse


def _header_name(raw: str) -> str | None:
    name = raw.strip().lower()
    if name and not re.fullmatch(r"[a-z0-9-]+", name):
        raise ValueError("must be a header name such as X-Forwarded-User")
    return name or None


def _text(raw: str) -> str:
    return raw.strip()


def _optional_text(raw: str) -> str | None:
    return raw.strip() or None


def _shown(env: str, raw: str) -> str:
    """How a rejected value appears in the error: never a password or token."""
    if env == "DATABASE_URL":
        try:
            return repr(make_url(raw.strip()).render_as_string(hide_password=True))
        except (ArgumentError, ValueError):
            return "(unparseable URL)"
    if "TOKEN" in env or "SECRET" in env:
        return "(hidden)"
    return repr(raw)


def _file(raw: str) -> Path | None:
    if not raw.strip():
        return None
    path = Path(raw.strip())
    if not path.is_file():
        raise ValueError("names no readable file")
    return path


def _command(raw: str) -> str:
    if not shlex.split(raw):
        raise ValueError("must not be empty")
    return raw.strip()


def _setting(
    env: str, parse: Callable[[str], Any], default: str, doc: str, *, secret: bool = False
) -> Any:
    # A secret never shows in a repr (nor, through it, in a log line or an error).
    return field(
        repr=not secret, metadata={"env": env, "parse": parse, "default": default, "doc": doc}
    )


@dataclass(frozen=True)
class Settings:
    """The server's configuration. Build with ``load_settings()``."""

    workspace_root: Path = _setting(
        "AGENT_WORKSPACE_ROOT",
        Path,
        "./workspace",
        "the only directory tree repositories may live in",
    )
    database_url: str = _setting(
        "DATABASE_URL",
        async_database_url,
        "sqlite+aiosqlite:///./data/agent-sessions.db",
        "SQLAlchemy async URL",
    )
    agent_command: str = _setting(
        "AGENT_COMMAND", _command, DEMO_AGENT_COMMAND, "command line of the default ACP agent"
    )
    agents_file: Path | None = _setting("AGENTS_FILE", _file, "", "TOML file naming more agents")
    agent_start_timeout: float = _setting(
        "AGENT_START_TIMEOUT", _float(0.1), "60", "seconds to answer initialize and session/new"
    )
    auto_register_repos: bool = _setting(
        "AUTO_REGISTER_REPOS", _bool, "true", "register git work trees under the root at start"
    )
    max_concurrent_sessions: int = _setting(
        "MAX_CONCURRENT_SESSIONS", _int(1), "5", "active sessions allowed at once"
    )
    idle_timeout_minutes: float = _setting(
        "AGENT_SESSION_IDLE_TIMEOUT",
        _float(0.0001),
        "30",
        "minutes without activity before idle completion",
    )
    idle_sweep_interval: float = _setting(
        "IDLE_SWEEP_INTERVAL", _float(0.01), "60", "seconds between idle sweeps"
    )
    agent_max_steps: int = _setting(
        "AGENT_MAX_STEPS", _int(1), "50", "tool calls per run before it is paused"
    )
    max_queued_prompts: int = _setting(
        "MAX_QUEUED_PROMPTS", _int(1), "10", "prompts waiting for the running turn, per session"
    )
    max_total_steps_per_run: int = _setting(
        "MAX_TOTAL_STEPS_PER_RUN", _int(1), "500", "cumulative cap across resumes"
    )
    permission_timeout: float = _setting(
        "PERMISSION_TIMEOUT",
        _float(0.01),
        "600",
        "seconds before an unanswered permission is rejected",
    )
    client_tool_timeout: float = _setting(
        "CLIENT_TOOL_TIMEOUT",
        _float(0.01),
        "600",
        "seconds before an unanswered client tool call is a tool error",
    )
    max_client_tool_result_bytes: int = _setting(
        "MAX_CLIENT_TOOL_RESULT_BYTES",
        _int(1),
        "1048576",
        "largest client tool answer (result and content as JSON)",
    )
    agent_stop_grace: float = _setting(
        "AGENT_STOP_GRACE", _float(0.01), "5", "seconds between stop escalation steps"
    )
    agent_cgroups: str = _setting(
        "AGENT_CGROUPS",
        _choice("auto", "v2", "freezer", "pids", "off"),
        "auto",
        "a cgroup per agent (auto: the first writable of v2, freezer, pids), or off",
    )
    agent_sandbox: str = _setting(
        "AGENT_SANDBOX", _choice("auto", "on", "off"), "auto", "bubblewrap around agents"
    )
    agent_network: str = _setting(
        "AGENT_NETWORK", _choice("open", "none", "proxy"), "open", "sandboxed agents' network"
    )
    agent_network_allow: tuple[str, ...] = _setting(
        "AGENT_NETWORK_ALLOW", host_patterns, "", "hosts the egress proxy lets through"
    )
    agent_memory_max: int | None = _setting("AGENT_MEMORY_MAX", size, "4G", "memory per agent")
    agent_pids_max: int | None = _setting("AGENT_PIDS_MAX", limit(1), "1024", "processes per agent")
    agent_cpu_max: float | None = _setting("AGENT_CPU_MAX", cores, "", "CPU cores per agent")
    max_prompt_bytes: int = _setting("MAX_PROMPT_BYTES", _int(1), "1048576", "prompt size limit")
    max_body_bytes: int = _setting("MAX_BODY_BYTES", _int(1), "2097152", "request body size limit")
    max_ws_message_bytes: int = _setting(
        "MAX_WS_MESSAGE_BYTES", _int(1), "1048576", "WebSocket client frame size limit"
    )
    ws_stall_seconds: float = _setting(
        "WS_STALL_SECONDS", _float(0.1), "60", "seconds until a stalled viewer is dropped"
    )
    max_agent_line_bytes: int = _setting(
        "MAX_AGENT_LINE_BYTES", _int(1024), "67108864", "longest line an agent may write"
    )
    max_image_bytes: int = _setting(
        "MAX_IMAGE_BYTES", _int(1), "5242880", "largest image in a prompt (decoded)"
    )
    max_embed_bytes: int = _setting(
        "MAX_EMBED_BYTES", _int(0), "262144", "largest file embedded in a prompt"
    )
    max_diff_bytes: int = _setting(
        "MAX_DIFF_BYTES", _int(1024), "1048576", "largest patch in a changes answer"
    )
    default_isolation: str = _setting(
        "DEFAULT_ISOLATION",
        _choice("none", "worktree"),
        "none",
        "isolation of sessions created without one: none or worktree",
    )
    git_author_name: str = _setting(
        "GIT_AUTHOR_NAME", _command, "agent-sessions", "author name of commit and merge"
    )
    git_author_email: str = _setting(
        "GIT_AUTHOR_EMAIL", _command, "agent-sessions@localhost", "author email of commit and merge"
    )
    api_token: str | None = _setting(
        "API_TOKEN", _optional_text, "", "bearer token required on /api and /ws", secret=True
    )
    max_sessions_per_user: int | None = _setting(
        "MAX_SESSIONS_PER_USER",
        _optional_int(1),
        "",
        "active sessions one user may have at once (empty: no limit but the server's)",
    )
    auth_proxy_header: str | None = _setting(
        "AUTH_PROXY_HEADER",
        _header_name,
        "",
        "header a signing-in proxy names the user in (believed only with AUTH_PROXY_SECRET)",
    )
    auth_proxy_secret: str | None = _setting(
        "AUTH_PROXY_SECRET",
        _optional_text,
        "",
        "the proxy proves itself with X-Auth-Proxy-Secret: <this>",
        secret=True,
    )
    auth_proxy_create_users: bool = _setting(
        "AUTH_PROXY_CREATE_USERS",
        _bool,
        "false",
        "a name the proxy signs in that is no user yet becomes a member (else 403)",
    )
    allowed_origins: tuple[str, ...] = _setting(
        "ALLOWED_ORIGINS", origins, "", "extra origins allowed to open WebSockets"
    )
    host: str = _setting("HOST", _text, "127.0.0.1", "listen address")
    port: int = _setting("PORT", _int(0, 65535), "8000", "listen port")
    allowed_hosts: tuple[str, ...] = _setting(
        "ALLOWED_HOSTS",
        host_names,
        "",
        "Host header values accepted (default: loopback names and the listen address)",
    )
    log_level: str = _setting(
        "LOG_LEVEL", _choice("debug", "info", "warning", "error"), "info", "log level"
    )
    log_format: str = _setting("LOG_FORMAT", _choice("text", "json"), "text", "text or json")
    # Scale-out (PostgreSQL only): an addition to API.md's table.
    node_id: str | None = _setting(
        "NODE_ID", _optional_text, "", "this node's id (default: host name and port)"
    )
    node_url: str | None = _setting(
        "NODE_URL",
        _optional_text,
        "",
        "URL the other nodes reach this one at (default: http://HOST:PORT)",
    )
    cluster_secret: str | None = _setting(
        "CLUSTER_SECRET",
        _optional_text,
        "",
        "shared secret on requests forwarded between nodes",
        secret=True,
    )
    lease_seconds: float = _setting(
        "LEASE_SECONDS", _float(0.5), "15", "seconds a session lease lasts without a heartbeat"
    )

    @classmethod
    def variables(cls) -> dict[str, str]:
        """Every environment variable with its default, in declaration order."""
        return {f.metadata["env"]: f.metadata["default"] for f in fields(cls)}

    def with_changes(self, **changes: Any) -> Settings:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return Settings(**values)

    @property
    def prompt_room_bytes(self) -> int:
        """What a prompt's body (``POST …/prompt``, the WebSocket ``prompt`` frame) may
        need beyond MAX_BODY_BYTES / MAX_WS_MESSAGE_BYTES: its text at MAX_PROMPT_BYTES
        and one image at MAX_IMAGE_BYTES in base64, plus 64 KiB of JSON around them."""
        return self.max_prompt_bytes + 4 * ((self.max_image_bytes + 2) // 3) + 65536

    @property
    def max_prompt_body_bytes(self) -> int:
        """The largest ``POST …/prompt`` body."""
        return max(self.max_body_bytes, self.prompt_room_bytes)

    @property
    def max_prompt_frame_bytes(self) -> int:
        """The largest WebSocket ``prompt`` frame."""
        return max(self.max_ws_message_bytes, self.prompt_room_bytes)

    def accepted_hosts(self) -> frozenset[str] | None:
        """The host names a request's ``Host`` may carry (None: any). By default the
        loopback names, the listen address and this node's URL host; a wildcard listen
        address (0.0.0.0, ::) needs a token and allows any host unless ALLOWED_HOSTS says."""
        if "*" in self.allowed_hosts:
            return None
        if self.allowed_hosts:
            return frozenset(self.allowed_hosts)
        listen = self.host.strip("[]").lower()
        if listen in ("0.0.0.0", "::", ""):  # noqa: S104 - recognising the wildcard, not binding
            return None
        names = {"localhost", "127.0.0.1", "::1", listen}
        if self.node_url:
            node_host = urlsplit(self.node_url).hostname
            if node_host:
                names.add(node_host.lower())
        return frozenset(names)

    def own_address(self) -> str:
        """Where a process of this machine reaches this server: the listen address, or
        loopback for a wildcard or ``localhost`` (``::1`` when it listens on IPv6 only)."""
        host = self.host.strip("[]")
        if host in ("", "0.0.0.0", "localhost"):  # noqa: S104 - reading the listen address
            return "127.0.0.1"
        return "::1" if host == "::" else host

    def check_listen_address(self) -> None:
        """Without a token, only a loopback address is allowed."""
        if self.api_token:
            return
        host = self.host.strip("[]")
        if host == "localhost":
            return
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise SettingsError(
                f"HOST={self.host} is not a loopback address and API_TOKEN is not set: "
                "set API_TOKEN to listen on other interfaces"
            )


def load_settings(
    environ: Mapping[str, str] | None = None, env_file: str | os.PathLike[str] | None = ".env"
) -> Settings:
    """Read settings from ``environ`` (default: os.environ) over an optional .env file."""
    source: dict[str, str] = {}
    if env_file is not None and Path(env_file).is_file():
        from dotenv import dotenv_values  # only where there is a file to read

        source.update({k: v for k, v in dotenv_values(env_file).items() if v is not None})
    source.update(os.environ if environ is None else environ)
    values: dict[str, Any] = {}
    for f in fields(Settings):
        env = f.metadata["env"]
        raw = source.get(env, f.metadata["default"])
        try:
            values[f.name] = f.metadata["parse"](raw)
        except ValueError as exc:
            raise SettingsError(f"{env}={_shown(env, raw)} is invalid: {exc}") from None
    settings = Settings(**values)
    settings.check_listen_address()
    return settings


def read_agents_file(path: Path) -> dict[str, Any]:
    """The TOML of ``AGENTS_FILE``: its agents, their MCP servers and sandbox binds."""
    import tomllib  # only a server with an agents file reads TOML

    try:
        return tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"AGENTS_FILE={path} cannot be read: {exc}") from None
