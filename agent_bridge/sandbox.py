"""The wall around an agent: a ``SandboxPolicy`` (what it may see, where it may write, its
network) and the bubblewrap command line that builds it. No I/O here but the few ``stat``
calls that find an installation (``installation_roots``); the server decides the policy,
``agent_bridge.process`` and ``agent_bridge.terminals`` put the command in front of the
agent's and its terminals'.

What the sandbox holds (docs/sandbox.md says why):

- the system read-only (``/usr``, ``/etc`` and the ``/bin``, ``/lib*``, ``/sbin`` links or
  directories), plus ``read`` (the agent's installation, administrator's additions);
- the host's secrets under ``/etc`` masked (``host_secrets``: password hashes, SSH host
  keys, TLS private keys), bound last so no ``read`` addition shows them again: a root
  server's agent is its files' owner inside the sandbox, so their modes alone would not
  stop it reading them;
- the workspace and the private ``home`` read-write, plus ``write``;
- a new ``/proc`` in a new PID namespace, a minimal ``/dev``, a private ``/tmp``;
- new user, IPC, UTS and cgroup namespaces, every capability dropped (a root server's
  agent is root without any capability: it cannot remount a read-only bind), and
  ``no_new_privs`` (bubblewrap sets it);
- network ``open`` (the host's), ``none`` (a namespace with loopback only) or ``proxy``
  (the same, plus the server's egress proxy: its Unix socket bound in at ``PROXY_SOCKET``
  and ``agent_bridge.egress_forwarder`` started first, listening on the namespace's own
  loopback at ``proxy_port``: ``PROXY_PORT``, or the next port when the server's own
  port is ``PROXY_PORT``, so that the client tools' URL below keeps its port);
- under ``none`` and ``proxy``, the session's client-tools MCP server: its Unix socket
  (``mcp_socket``) bound in at ``MCP_SOCKET`` and the forwarder listening on the
  namespace's loopback at ``mcp_port`` (the server's own port: the URL the agent is given,
  ``http://127.0.0.1:PORT/mcp/sessions/<id>``, works unchanged inside).

Binds are applied parents first (bubblewrap mounts in order: a later bind covers an
earlier one), so ``write`` paths inside a ``read`` path stay writable and the reverse.
"""

from __future__ import annotations

import glob
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final, Literal

import msgspec

__all__ = [
    "MCP_SOCKET",
    "NETWORKS",
    "PROXY_PORT",
    "PROXY_SOCKET",
    "Network",
    "SandboxPolicy",
    "bwrap_argv",
    "host_secrets",
    "installation_roots",
    "proxy_environment",
    "proxy_port",
    "sandbox_environment",
]

Network = Literal["open", "none", "proxy"]
NETWORKS: Final = ("open", "none", "proxy")
PROXY_PORT: Final = 3128  # on the sandbox's own loopback: nobody else listens there
PROXY_SOCKET: Final = "/run/agent-sessions/egress.sock"
MCP_SOCKET: Final = "/run/agent-sessions/mcp.sock"
FORWARDER: Final = str(Path(__file__).with_name("egress_forwarder.py"))
SYSTEM_DIRS: Final = ("/usr", "/etc")
SYSTEM_LINKS: Final = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# The host's secrets under the read-only /etc: files are covered by /dev/null (bound
# nodev, so opening it fails), folders by an empty read-only tmpfs. A glob for the SSH
# host keys (their public halves, ``*.pub``, stay readable).
SECRET_FILES: Final = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/security/opasswd",
    "/etc/ssh/ssh_host_*_key",
)
SECRET_DIRS: Final = ("/etc/ssl/private",)
# What the fixed environment keeps from the one it is given (LC_* too).
KEPT_ENV: Final = ("PATH", "LANG", "TERM")
ENV_PREFIXES: Final = ("LC_", "AGENT_SESSIONS_")
# The agent's own package: the exec wrapper and the forwarder run from it.
OWN_PACKAGE: Final = str(Path(__file__).parent)


class SandboxPolicy(msgspec.Struct, frozen=True):
    """One agent's wall. Paths are absolute; ``workspace`` is where it starts."""

    workspace: Path
    home: Path
    read: tuple[Path, ...] = ()
    write: tuple[Path, ...] = ()
    # (host path, path inside): a host path shown elsewhere (``~/x`` in the private home)
    mounts: tuple[tuple[Path, Path, bool], ...] = ()  # (source, target, writable)
    network: Network = "open"
    proxy_socket: Path | None = None  # the server's end, bound in at PROXY_SOCKET
    # the session's MCP relay (server's end, bound in at MCP_SOCKET) and the loopback port
    # the agent reaches it at; only under a network of its own (``none``, ``proxy``)
    mcp_socket: Path | None = None
    mcp_port: int = 0
    proxy_port: int = PROXY_PORT  # where the forwarder takes the agent's proxy requests
    bwrap: str = "bwrap"
    python: str = sys.executable  # runs the forwarder (``proxy``)

    def __post_init__(self) -> None:
        if self.network not in NETWORKS:
            raise ValueError(f"unknown network {self.network!r}")
        if self.network == "proxy" and self.proxy_socket is None:
            raise ValueError("network proxy needs the proxy's socket")
        if self.mcp_socket is not None and not 0 < self.mcp_port < 65536:
            raise ValueError("an MCP socket needs its port")
        if self.network == "proxy" and self.mcp_socket is not None:
            if self.mcp_port == self.proxy_port:
                raise ValueError(f"the MCP relay and the egress proxy share port {self.mcp_port}")


def _system(exists: Mapping[str, str | None]) -> list[str]:
    """``/usr``, ``/etc`` read-only; ``/bin`` and friends as the host has them: a link
    (merged /usr) stays a link, a directory is bound read-only. ``exists`` maps each
    path to its link target, "" for a directory, None when absent."""
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if exists.get(path) is not None:
            args += ["--ro-bind", path, path]
    for path in SYSTEM_LINKS:
        target = exists.get(path)
        if target:
            args += ["--symlink", target, path]
        elif target == "":
            args += ["--ro-bind", path, path]
    return args


def host_layout() -> dict[str, str | None]:
    """The host's system paths, for ``bwrap_argv``: link target, "" (a directory), None."""
    layout: dict[str, str | None] = {}
    for path in (*SYSTEM_DIRS, *SYSTEM_LINKS):
        if os.path.islink(path):
            layout[path] = os.readlink(path)
        else:
            layout[path] = "" if os.path.isdir(path) else None
    return layout


def host_secrets() -> tuple[tuple[str, bool], ...]:
    """The host's secrets present here, as (path, is a folder), for ``bwrap_argv``."""
    files = sorted(
        path
        for pattern in SECRET_FILES
        for path in glob.glob(pattern)
        if os.path.isfile(path) and not os.path.islink(path)
    )
    dirs = [path for path in SECRET_DIRS if os.path.isdir(path) and not os.path.islink(path)]
    return (*((f, False) for f in files), *((d, True) for d in dirs))


def _masks(secrets: Iterable[tuple[str, bool]]) -> list[str]:
    args: list[str] = []
    for path, folder in secrets:
        if folder:
            args += ["--tmpfs", path, "--remount-ro", path]
        else:
            args += ["--ro-bind", os.devnull, path]
    return args


def _binds(policy: SandboxPolicy) -> list[str]:
    """Every bind, parents before children; at one path a writable one wins."""
    entries: list[tuple[Path, Path, bool, bool]] = []  # (source, target, writable, required)
    entries += [(p, p, False, False) for p in (Path(OWN_PACKAGE), *policy.read)]
    entries += [(policy.workspace, policy.workspace, True, True)]
    entries += [(policy.home, policy.home, True, True)]
    entries += [(p, p, True, False) for p in policy.write]
    entries += [(s, t, w, False) for s, t, w in policy.mounts]
    entries.sort(key=lambda e: (len(e[1].parts), str(e[1]), e[2]))
    args: list[str] = []
    for source, target, writable, required in entries:
        flag = "--bind" if writable else "--ro-bind"
        args += [flag if required else f"{flag}-try", str(source), str(target)]
    return args


def bwrap_argv(
    policy: SandboxPolicy,
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    layout: Mapping[str, str | None] | None = None,
    secrets: Iterable[tuple[str, bool]] | None = None,
) -> list[str]:
    """The command line that runs ``argv`` inside ``policy``'s wall, starting in ``cwd``
    (default: the workspace). ``layout`` and ``secrets`` default to the host's."""
    args = [
        policy.bwrap,
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--cap-drop",
        "ALL",
        "--hostname",
        "agent-sandbox",
    ]
    if policy.network != "open":
        args.append("--unshare-net")
    args += _system(host_layout() if layout is None else layout)
    private = ["--tmpfs", "/tmp", "--tmpfs", "/run"]  # noqa: S108 - the sandbox's own tmpfs
    args += ["--proc", "/proc", "--dev", "/dev", *private]
    args += _resolver(layout)
    args += _binds(policy)
    args += _masks(host_secrets() if secrets is None else secrets)
    relays: list[str] = []  # the forwarder's PORT SOCKET pairs
    if policy.network == "proxy":
        assert policy.proxy_socket is not None
        args += ["--ro-bind", str(policy.proxy_socket), PROXY_SOCKET]
        relays += [str(policy.proxy_port), PROXY_SOCKET]
    if policy.network != "open" and policy.mcp_socket is not None:
        args += ["--ro-bind", str(policy.mcp_socket), MCP_SOCKET]
        relays += [str(policy.mcp_port), MCP_SOCKET]
    command = list(argv)
    if relays:
        command = [policy.python, "-I", "-S", FORWARDER, *relays, "--", *command]
    args += ["--chdir", str(cwd or policy.workspace), "--", *command]
    return args


def _resolver(layout: Mapping[str, str | None] | None) -> list[str]:
    """``/etc/resolv.conf`` often links into ``/run``, which the sandbox does not see:
    its target alone, read-only (host lookups only: the tests pass a layout)."""
    if layout is not None:
        return []
    try:
        target = os.path.realpath("/etc/resolv.conf")
    except OSError:  # pragma: no cover - no resolver configured
        return []
    if target.startswith("/run/"):
        return ["--ro-bind-try", target, target]
    return []


def proxy_port(server_port: int) -> int:
    """Where the egress proxy listens inside a sandbox of a server on ``server_port``:
    ``PROXY_PORT``, unless the server's own port (which the client tools' relay keeps,
    so that their URL works unchanged inside) is that one."""
    return PROXY_PORT + 1 if server_port == PROXY_PORT else PROXY_PORT


def proxy_environment(port: int = PROXY_PORT) -> dict[str, str]:
    """The variables that send an agent's HTTP(S) through the forwarder on ``port``."""
    url = f"http://127.0.0.1:{port}"
    return {
        "HTTPS_PROXY": url,
        "HTTP_PROXY": url,
        "https_proxy": url,
        "http_proxy": url,
        "ALL_PROXY": url,
        # the sandbox's own loopback: the client-tools MCP server's forwarder listens there
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "NODE_USE_ENV_PROXY": "1",  # Node's own fetch honours the variables only so
    }


def sandbox_environment(
    source: Mapping[str, str],
    extra: Mapping[str, str],
    home: Path,
    network: Network,
    proxy_port: int = PROXY_PORT,
) -> dict[str, str]:
    """The fixed environment of a sandboxed agent: ``PATH``, ``LANG``, ``TERM``, ``LC_*``
    and the ``AGENT_SESSIONS_*`` markers from ``source``; ``HOME`` the private ``home``,
    ``TMPDIR`` the private ``/tmp``; the proxy's variables under ``proxy`` (the
    forwarder on ``proxy_port``); then ``extra`` (the agent's own ``env``), which wins."""
    env = {k: v for k, v in source.items() if k in KEPT_ENV or k.startswith(ENV_PREFIXES)}
    env["HOME"] = str(home)
    env["TMPDIR"] = "/tmp"  # noqa: S108 - the sandbox's own tmpfs
    if network == "proxy":
        env.update(proxy_environment(proxy_port))
    env.update(extra)
    return env


def _venv_roots(path: Path) -> list[Path]:
    """The virtual environment ``path`` is in, and the interpreter it was made from."""
    for parent in path.parents:
        config = parent / "pyvenv.cfg"
        if config.is_file():
            roots = [parent]
            for line in config.read_text(errors="replace").splitlines():
                key, _, value = line.partition("=")
                if key.strip() == "home" and value.strip():
                    home = Path(value.strip())
                    roots.append(home.parent if home.name == "bin" else home)
            return roots
    return []


def _root_of(path: Path) -> list[Path]:
    """Where the program at ``path`` is installed: the folder holding its
    ``node_modules``, its virtual environment (and base interpreter), the prefix of a
    ``bin`` folder, else its own folder."""
    if not path.is_absolute() or not path.exists():
        return []
    roots: list[Path] = []
    for candidate in (path, path.resolve()):
        parts = candidate.parts
        if "node_modules" in parts:
            roots.append(Path(*parts[: parts.index("node_modules")]))
            continue
        venv = _venv_roots(candidate)
        if venv:
            roots += venv
            continue
        folder = candidate.parent
        roots.append(folder.parent if folder.name == "bin" else folder)
    return roots


def installation_roots(argv: Sequence[str], env: Mapping[str, str]) -> list[Path]:
    """The folders the command ``argv`` needs to read: its program's installation (on
    ``env``'s PATH), that of every absolute path among its arguments (``env K=V prog``,
    ``node script.js``), and this interpreter's (the forwarder runs on it). System
    folders are left out: they are bound anyway."""
    import shutil  # noqa: PLC0415 - only the server builds policies

    found: list[Path] = []
    first = shutil.which(argv[0], path=env.get("PATH", os.defpath)) if argv else None
    candidates: Iterable[str] = [first or "", *argv, sys.executable]
    for arg in candidates:
        if arg.startswith("/"):
            found += _root_of(Path(arg))
    roots: list[Path] = []
    for root in found:
        if root == Path("/") or any(root.is_relative_to(s) for s in SYSTEM_DIRS):
            continue
        if root not in roots:
            roots.append(root)
    return roots
