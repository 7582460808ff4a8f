"""The sandbox in force on this server, and each session's policy.

``start`` decides once (``AGENT_SANDBOX``): ``auto`` probes bubblewrap and turns the
sandbox on where it works, ``on`` requires it (every agent start is refused with 503
``sandbox_unavailable``, naming why, when it does not), ``off`` never uses it. One log
line says which. ``policy`` builds a session's ``SandboxPolicy``: its workspace (for a
worktree, what git needs of the repository's ``.git``), its agent's private home under
the data directory, what its programs need to read, ``AGENTS_FILE``'s additions, and
under ``proxy`` its egress socket (``open_egress``/``close_egress`` around its agent).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskStatus
from msgspec.structs import replace
from sqlalchemy.engine import make_url

from agent_bridge.limits import AgentLimits, LimitCgroups
from agent_bridge.sandbox import (
    Network,
    SandboxPolicy,
    installation_roots,
    proxy_port,
    sandbox_environment,
)
from server.sandbox.config import AgentSandbox
from server.sandbox.egress import EgressProxy
from server.sandbox.probe import probe_bwrap
from server.settings import Settings

__all__ = ["SandboxHost", "data_directory"]

log = logging.getLogger("agent_sessions.sandbox")

HOMES = "agent-homes"
_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")


def data_directory(settings: Settings) -> Path:
    """The server's data directory: the SQLite file's folder (``./data`` otherwise)."""
    url = make_url(settings.database_url)
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        return Path(url.database).resolve().parent
    return Path("data").resolve()


def _overlaps(path: Path, other: Path) -> bool:
    return path.is_relative_to(other) or other.is_relative_to(path)


def git_paths(workspace: Path, root: Path) -> tuple[list[Path], list[Path]]:
    """(read, write) a worktree at ``workspace`` needs of its repository's ``.git`` for
    git to work and commit: the common folder read-only, its objects, refs and logs and
    the worktree's own folder writable (so hooks and config stay read-only). Nothing
    for a repository itself, or a ``.git`` pointing outside the workspace root."""
    marker = workspace / ".git"
    if not marker.is_file():
        return [], []
    text = marker.read_text(errors="replace").strip()
    if not text.startswith("gitdir:"):
        return [], []
    gitdir = (workspace / text[7:].strip()).resolve()
    common_file = gitdir / "commondir"
    common = (
        (gitdir / common_file.read_text().strip()).resolve()
        if common_file.is_file()
        else gitdir.parent.parent
    )
    if not gitdir.is_relative_to(root) or not common.is_relative_to(root):
        return [], []
    return [common], [gitdir, common / "objects", common / "refs", common / "logs"]


class SandboxHost:
    def __init__(
        self,
        settings: Settings,
        sandboxes: Mapping[str, AgentSandbox] | None = None,
        *,
        limit_name: str = "agents",
    ) -> None:
        self.settings = settings
        # agent id -> its additions from AGENTS_FILE (each agent's ``AgentConfig.sandbox``)
        self.sandboxes = dict(sandboxes or {})
        # where the egress proxy listens inside (the policy's forwarder, the environment's
        # proxy variables): the same for every agent of this server
        self.proxy_port = proxy_port(settings.port)
        self.data = data_directory(settings)
        self.enabled = False
        self.reason: str | None = "not started"
        self.bwrap: str | None = None
        self.egress = EgressProxy()
        limits = AgentLimits(
            settings.agent_memory_max, settings.agent_pids_max, settings.agent_cpu_max
        )
        self._limits = LimitCgroups(limit_name, limits)
        self.limits: LimitCgroups | None = None  # once started, with the sandbox on

    @property
    def network(self) -> Network:
        return self.settings.agent_network  # type: ignore[return-value] # one of NETWORKS

    def start(self) -> None:
        """Decide, once, whether agents run sandboxed; one log line either way."""
        mode = self.settings.agent_sandbox
        if mode == "off":
            self.enabled, self.reason = False, "AGENT_SANDBOX=off"
            log.info(
                "agents run without a sandbox (AGENT_SANDBOX=off)",
                extra={"event": "agent_sandbox", "enabled": False},
            )
            return
        self.bwrap, why = probe_bwrap(self.data / HOMES / ".probe")
        self.enabled, self.reason = why is None, why
        if self.enabled:
            self.limits = self._limits if self._limits.prepare() else None
            log.info(
                "agents run in a bubblewrap sandbox (network %s)",
                self.network,
                extra={"event": "agent_sandbox", "enabled": True, "network": self.network},
            )
        elif mode == "on":
            log.error(
                "AGENT_SANDBOX=on but %s: agents will not be started",
                why,
                extra={"event": "agent_sandbox", "enabled": False, "reason": why},
            )
        else:
            log.warning(
                "agents run WITHOUT a sandbox: %s",
                why,
                extra={"event": "agent_sandbox", "enabled": False, "reason": why},
            )

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Probe (off the event loop), then serve the egress proxy until cancelled."""
        await anyio.to_thread.run_sync(self.start)
        if self.enabled and self.network != "open":  # the sessions' sockets: proxy, MCP
            try:
                await self.egress.run(task_status=task_status)
            finally:
                self.release()
        else:
            task_status.started()
            try:
                await anyio.sleep_forever()
            finally:
                self.release()

    def release(self) -> None:
        """At shutdown, every agent stopped: remove the limit cgroups' directories."""
        if self.limits is not None:
            self.limits.release()

    # -- what clients see ---------------------------------------------------------------

    def view(self) -> dict[str, Any]:
        """``{enabled, network}``: Session.sandbox and each agent's in GET /api/agents."""
        return {"enabled": self.enabled, "network": self.network if self.enabled else "open"}

    def readiness(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "reason": None if self.enabled else self.reason}

    # -- a session's wall ---------------------------------------------------------------

    def refusal(self) -> str | None:
        """Why no agent may start (AGENT_SANDBOX=on, no sandbox here: a 503), or None."""
        if self.settings.agent_sandbox == "on" and not self.enabled:
            return self.reason or "unknown"
        return None

    def home(self, agent_id: str) -> Path:
        """The agent's private home, kept across its sessions (made 0700)."""
        name = agent_id
        if not _SAFE_NAME.fullmatch(agent_id):
            name = "agent-" + hashlib.sha256(agent_id.encode()).hexdigest()[:16]
        path = self.data / HOMES / name
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        return path

    def environment(self, agent: Any, env: Mapping[str, str]) -> dict[str, str]:
        """The environment of ``agent`` (an ``AgentConfig``): ``env`` as it is without a
        sandbox; with one, the fixed list plus the agent's own ``env``."""
        if not self.enabled:
            return dict(env)
        home = self.home(agent.id)
        return sandbox_environment(env, agent.env, home, self.network, self.proxy_port)

    def _allowed(self, agent_id: str) -> tuple[str, ...]:
        own = self.sandboxes.get(agent_id, AgentSandbox()).network
        return tuple(dict.fromkeys((*self.settings.agent_network_allow, *own)))

    async def open_egress(self, session_id: str, agent_id: str) -> Path | None:
        if not self.enabled or self.network != "proxy":
            return None
        return await self.egress.open(session_id, agent_id, self._allowed(agent_id))

    def close_egress(self, session_id: str) -> None:
        """End the session's sockets (egress proxy, MCP relay): its agent is gone."""
        self.egress.close(session_id)

    async def wall(
        self,
        session_id: str,
        agent_id: str,
        workspace: Path,
        commands: Sequence[Sequence[str]],
        env: Mapping[str, str],
        *,
        client_tools: bool = False,
    ) -> SandboxPolicy | None:
        """The session's policy, its egress socket opened under ``proxy`` and, with
        ``client_tools`` under ``none`` or ``proxy``, its MCP relay socket (close them
        with ``close_egress`` when its agent is gone); None without a sandbox."""
        if not self.enabled:
            return None
        try:
            socket = await self.open_egress(session_id, agent_id)
            policy = self.policy(agent_id, workspace, commands, env, socket)
            if client_tools and policy is not None and self.network != "open":
                port = self.settings.port
                relay = await self.egress.open_mcp(
                    session_id, agent_id, self.settings.own_address(), port
                )
                policy = replace(policy, mcp_socket=relay, mcp_port=port)
            return policy
        except BaseException:
            self.close_egress(session_id)
            raise

    def policy(
        self,
        agent_id: str,
        workspace: Path,
        commands: Sequence[Sequence[str]],
        env: Mapping[str, str],
        proxy_socket: Path | None = None,
    ) -> SandboxPolicy | None:
        """The wall of an agent working in ``workspace``, running ``commands`` (its own,
        its stdio MCP servers'); None when agents run without one."""
        if not self.enabled:
            return None
        root = self.settings.workspace_root
        home = self.home(agent_id)
        user_home = Path.home()
        hidden = (root, self.data)
        read: list[Path] = []
        for command in commands:
            for path in installation_roots(command, env):
                if user_home.is_relative_to(path) or any(_overlaps(path, h) for h in hidden):
                    continue  # never the host's home, another repository or the data
                read.append(path)
        git_read, git_write = git_paths(workspace, root)
        extra = self.sandboxes.get(agent_id, AgentSandbox())
        mounts: list[tuple[Path, Path, bool]] = []
        write: list[Path] = []
        for paths, writable in ((extra.read, False), (extra.write, True)):
            for text in paths:
                if text == "~" or text.startswith("~/"):
                    rest = text[2:]
                    mounts.append((user_home / rest, home / rest, writable))
                elif writable:
                    write.append(Path(text))
                else:
                    read.append(Path(text))
        return SandboxPolicy(
            workspace=workspace,
            home=home,
            read=tuple(dict.fromkeys([*read, *git_read])),
            write=tuple(dict.fromkeys([*write, *git_write])),
            mounts=tuple(mounts),
            network=self.network,
            proxy_socket=proxy_socket,
            proxy_port=self.proxy_port,
            bwrap=self.bwrap or "bwrap",
        )
