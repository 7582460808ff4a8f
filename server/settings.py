"""Typed settings from the environment and an optional ``.env`` file.

Every variable of API.md's configuration table is a field here; a bad value raises
``SettingsError`` with one clear line, and the server refuses to start.
"""

import ipaddress
import os
import shlex
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

import msgspec
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from server.setting_values import (
    async_database_url,
    choice,
    command,
    cores,
    flag,
    header_name,
    host_names,
    host_patterns,
    limit,
    number,
    optional_text,
    optional_whole,
    origins,
    readable_file,
    size,
    text,
    whole,
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


class Setting(msgspec.Struct, frozen=True):
    """Where a field of ``Settings`` comes from: its variable, how its text is read, the
    default text and a line of doc. A secret never shows in a repr (nor, through it, in a
    log line or an error)."""

    env: str
    parse: Callable[[str], Any]
    default: str
    doc: str
    secret: bool = False


class Settings(msgspec.Struct, frozen=True):
    """The server's configuration. Build with ``load_settings()``."""

    workspace_root: Annotated[
        Path,
        Setting(
            "AGENT_WORKSPACE_ROOT",
            Path,
            "./workspace",
            "the only directory tree repositories may live in",
        ),
    ]
    database_url: Annotated[
        str,
        Setting(
            "DATABASE_URL",
            async_database_url,
            "sqlite+aiosqlite:///./data/agent-sessions.db",
            "SQLAlchemy async URL",
        ),
    ]
    agent_command: Annotated[
        str,
        Setting(
            "AGENT_COMMAND", command, DEMO_AGENT_COMMAND, "command line of the default ACP agent"
        ),
    ]
    agents_file: Annotated[
        Path | None, Setting("AGENTS_FILE", readable_file, "", "TOML file naming more agents")
    ]
    agent_start_timeout: Annotated[
        float,
        Setting(
            "AGENT_START_TIMEOUT", number(0.1), "60", "seconds to answer initialize and session/new"
        ),
    ]
    auto_register_repos: Annotated[
        bool,
        Setting(
            "AUTO_REGISTER_REPOS", flag, "true", "register git work trees under the root at start"
        ),
    ]
    max_concurrent_sessions: Annotated[
        int, Setting("MAX_CONCURRENT_SESSIONS", whole(1), "5", "active sessions allowed at once")
    ]
    idle_timeout_minutes: Annotated[
        float,
        Setting(
            "AGENT_SESSION_IDLE_TIMEOUT",
            number(0.0001),
            "30",
            "minutes without activity before idle completion",
        ),
    ]
    idle_sweep_interval: Annotated[
        float, Setting("IDLE_SWEEP_INTERVAL", number(0.01), "60", "seconds between idle sweeps")
    ]
    agent_max_steps: Annotated[
        int, Setting("AGENT_MAX_STEPS", whole(1), "50", "tool calls per run before it is paused")
    ]
    max_queued_prompts: Annotated[
        int,
        Setting(
            "MAX_QUEUED_PROMPTS",
            whole(1),
            "10",
            "prompts waiting for the running turn, per session",
        ),
    ]
    max_total_steps_per_run: Annotated[
        int, Setting("MAX_TOTAL_STEPS_PER_RUN", whole(1), "500", "cumulative cap across resumes")
    ]
    permission_timeout: Annotated[
        float,
        Setting(
            "PERMISSION_TIMEOUT",
            number(0.01),
            "600",
            "seconds before an unanswered permission is rejected",
        ),
    ]
    client_tool_timeout: Annotated[
        float,
        Setting(
            "CLIENT_TOOL_TIMEOUT",
            number(0.01),
            "600",
            "seconds before an unanswered client tool call is a tool error",
        ),
    ]
    max_client_tool_result_bytes: Annotated[
        int,
        Setting(
            "MAX_CLIENT_TOOL_RESULT_BYTES",
            whole(1),
            "1048576",
            "largest client tool answer (result and content as JSON)",
        ),
    ]
    agent_stop_grace: Annotated[
        float,
        Setting("AGENT_STOP_GRACE", number(0.01), "5", "seconds between stop escalation steps"),
    ]
    agent_cgroups: Annotated[
        str,
        Setting(
            "AGENT_CGROUPS",
            choice("auto", "v2", "freezer", "pids", "off"),
            "auto",
            "a cgroup per agent (auto: the first writable of v2, freezer, pids), or off",
        ),
    ]
    agent_sandbox: Annotated[
        str,
        Setting("AGENT_SANDBOX", choice("auto", "on", "off"), "auto", "bubblewrap around agents"),
    ]
    agent_network: Annotated[
        str,
        Setting(
            "AGENT_NETWORK", choice("open", "none", "proxy"), "open", "sandboxed agents' network"
        ),
    ]
    agent_network_allow: Annotated[
        tuple[str, ...],
        Setting("AGENT_NETWORK_ALLOW", host_patterns, "", "hosts the egress proxy lets through"),
    ]
    agent_memory_max: Annotated[
        int | None, Setting("AGENT_MEMORY_MAX", size, "4G", "memory per agent")
    ]
    agent_pids_max: Annotated[
        int | None, Setting("AGENT_PIDS_MAX", limit(1), "1024", "processes per agent")
    ]
    agent_cpu_max: Annotated[
        float | None, Setting("AGENT_CPU_MAX", cores, "", "CPU cores per agent")
    ]
    max_prompt_bytes: Annotated[
        int, Setting("MAX_PROMPT_BYTES", whole(1), "1048576", "prompt size limit")
    ]
    max_body_bytes: Annotated[
        int, Setting("MAX_BODY_BYTES", whole(1), "2097152", "request body size limit")
    ]
    max_ws_message_bytes: Annotated[
        int,
        Setting("MAX_WS_MESSAGE_BYTES", whole(1), "1048576", "WebSocket client frame size limit"),
    ]
    ws_stall_seconds: Annotated[
        float,
        Setting("WS_STALL_SECONDS", number(0.1), "60", "seconds until a stalled viewer is dropped"),
    ]
    max_agent_line_bytes: Annotated[
        int,
        Setting("MAX_AGENT_LINE_BYTES", whole(1024), "67108864", "longest line an agent may write"),
    ]
    max_image_bytes: Annotated[
        int, Setting("MAX_IMAGE_BYTES", whole(1), "5242880", "largest image in a prompt (decoded)")
    ]
    max_embed_bytes: Annotated[
        int, Setting("MAX_EMBED_BYTES", whole(0), "262144", "largest file embedded in a prompt")
    ]
    max_diff_bytes: Annotated[
        int, Setting("MAX_DIFF_BYTES", whole(1024), "1048576", "largest patch in a changes answer")
    ]
    default_isolation: Annotated[
        str,
        Setting(
            "DEFAULT_ISOLATION",
            choice("none", "worktree"),
            "none",
            "isolation of sessions created without one: none or worktree",
        ),
    ]
    git_author_name: Annotated[
        str,
        Setting("GIT_AUTHOR_NAME", command, "agent-sessions", "author name of commit and merge"),
    ]
    git_author_email: Annotated[
        str,
        Setting(
            "GIT_AUTHOR_EMAIL",
            command,
            "agent-sessions@localhost",
            "author email of commit and merge",
        ),
    ]
    api_token: Annotated[
        str | None,
        Setting(
            "API_TOKEN", optional_text, "", "bearer token required on /api and /ws", secret=True
        ),
    ]
    max_sessions_per_user: Annotated[
        int | None,
        Setting(
            "MAX_SESSIONS_PER_USER",
            optional_whole(1),
            "",
            "active sessions one user may have at once (empty: no limit but the server's)",
        ),
    ]
    auth_proxy_header: Annotated[
        str | None,
        Setting(
            "AUTH_PROXY_HEADER",
            header_name,
            "",
            "header a signing-in proxy names the user in (believed only with AUTH_PROXY_SECRET)",
        ),
    ]
    auth_proxy_secret: Annotated[
        str | None,
        Setting(
            "AUTH_PROXY_SECRET",
            optional_text,
            "",
            "the proxy proves itself with X-Auth-Proxy-Secret: <this>",
            secret=True,
        ),
    ]
    auth_proxy_create_users: Annotated[
        bool,
        Setting(
            "AUTH_PROXY_CREATE_USERS",
            flag,
            "false",
            "a name the proxy signs in that is no user yet becomes a member (else 403)",
        ),
    ]
    allowed_origins: Annotated[
        tuple[str, ...],
        Setting("ALLOWED_ORIGINS", origins, "", "extra origins allowed to open WebSockets"),
    ]
    host: Annotated[str, Setting("HOST", text, "127.0.0.1", "listen address")]
    port: Annotated[int, Setting("PORT", whole(0, 65535), "8000", "listen port")]
    allowed_hosts: Annotated[
        tuple[str, ...],
        Setting(
            "ALLOWED_HOSTS",
            host_names,
            "",
            "Host header values accepted (default: loopback names and the listen address)",
        ),
    ]
    log_level: Annotated[
        str, Setting("LOG_LEVEL", choice("debug", "info", "warning", "error"), "info", "log level")
    ]
    log_format: Annotated[
        str, Setting("LOG_FORMAT", choice("text", "json"), "text", "text or json")
    ]
    # Scale-out (PostgreSQL only): an addition to API.md's table.
    node_id: Annotated[
        str | None,
        Setting("NODE_ID", optional_text, "", "this node's id (default: host name and port)"),
    ]
    node_url: Annotated[
        str | None,
        Setting(
            "NODE_URL",
            optional_text,
            "",
            "URL the other nodes reach this one at (default: http://HOST:PORT)",
        ),
    ]
    cluster_secret: Annotated[
        str | None,
        Setting(
            "CLUSTER_SECRET",
            optional_text,
            "",
            "shared secret on requests forwarded between nodes",
            secret=True,
        ),
    ]
    lease_seconds: Annotated[
        float,
        Setting(
            "LEASE_SECONDS", number(0.5), "15", "seconds a session lease lasts without a heartbeat"
        ),
    ]

    @classmethod
    def variables(cls) -> dict[str, str]:
        """Every environment variable with its default, in declaration order."""
        return {s.env: s.default for s in _SETTINGS.values()}

    def with_changes(self, **changes: Any) -> "Settings":
        return msgspec.structs.replace(self, **changes)

    def __repr__(self) -> str:
        shown = (f"{name}={getattr(self, name)!r}" for name, s in _SETTINGS.items() if not s.secret)
        return f"Settings({', '.join(shown)})"

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


# Each field's Setting, in declaration order.
_SETTINGS: dict[str, Setting] = {
    name: hint.__metadata__[0] for name, hint in Settings.__annotations__.items()
}


def _shown(setting: Setting, raw: str) -> str:
    """How a rejected value appears in the error: never a password or a secret."""
    if setting.env == "DATABASE_URL":
        try:
            return repr(make_url(raw.strip()).render_as_string(hide_password=True))
        except (ArgumentError, ValueError):
            return "(unparseable URL)"
    return "(hidden)" if setting.secret else repr(raw)


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
    for name, setting in _SETTINGS.items():
        env = setting.env
        raw = source.get(env, setting.default)
        try:
            values[name] = setting.parse(raw)
        except ValueError as exc:
            raise SettingsError(f"{env}={_shown(setting, raw)} is invalid: {exc}") from None
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
