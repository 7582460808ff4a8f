"""The egress proxy of ``AGENT_NETWORK=proxy``: one Unix socket per sandboxed session
(bound into its sandbox; ``agent_bridge.egress_forwarder`` relays the agent's loopback
connections to it), speaking just enough HTTP to learn where a connection goes:
``CONNECT host:port`` (HTTPS, anything over TLS: after the 200 the bytes are copied, never
read) and absolute-form plain HTTP requests. A host not allowed is refused with 403,
logged (``event=egress_refused``, host, session) and counted in ``/metrics``.

Allowed: ``AGENT_NETWORK_ALLOW`` plus the agent's own ``network`` list; ``*.example.com``
matches every name under example.com (not example.com itself). Names are resolved here,
on the server's side: the sandbox has no resolver of its own.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteStream, SocketStream, TaskGroup, TaskStatus

from server import metrics

__all__ = ["EgressProxy", "host_allowed", "mcp_head"]

log = logging.getLogger("agent_sessions.security")

MAX_HEAD = 16 * 1024
CONNECT_TIMEOUT = 10.0
HEAD_TIMEOUT = 30.0
CHUNK = 65536
MCP_METHODS = ("GET", "POST", "DELETE")  # streamable HTTP's
ESTABLISHED = b"HTTP/1.1 200 Connection Established\r\n\r\n"


def host_allowed(host: str, patterns: Iterable[str]) -> bool:
    """Whether ``host`` matches one of ``patterns`` (exact, or ``*.domain`` for names
    under the domain), case-insensitively."""
    name = host.strip().strip("[]").lower().rstrip(".")
    if not name:
        return False
    for pattern in patterns:
        if pattern.startswith("*."):
            if name.endswith(pattern[1:]) and len(name) > len(pattern) - 1:
                return True
        elif name == pattern:
            return True
    return False


def _split_host_port(authority: str, default_port: int) -> tuple[str, int] | None:
    host, port = authority, default_port
    if authority.startswith("["):  # [v6]:port
        end = authority.find("]")
        if end < 0:
            return None
        host, rest = authority[1:end], authority[end + 1 :]
        if rest:
            if not rest.startswith(":") or not rest[1:].isdigit():
                return None
            port = int(rest[1:])
    elif ":" in authority:
        host, _, text = authority.rpartition(":")
        if not text.isdigit():
            return None
        port = int(text)
    if not host or not 0 < port < 65536:
        return None
    return host, port


def parse_head(head: bytes) -> tuple[str, str, int, bytes] | None:
    """(method, host, port, the head to send upstream) of a proxy request, or None."""
    line, sep, rest = head.partition(b"\r\n")
    parts = line.decode("latin-1").split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        return None
    method, target, version = parts
    if method == "CONNECT":
        found = _split_host_port(target, 443)
        return None if found is None else (method, *found, b"")
    if not target.lower().startswith("http://"):
        return None
    authority, slash, path = target[7:].partition("/")
    found = _split_host_port(authority.rpartition("@")[2], 80)
    if found is None:
        return None
    first = f"{method} /{path} {version}"
    return method, found[0], found[1], first.encode("latin-1") + sep + rest


async def _copy(source: ByteStream, target: ByteStream) -> None:
    with contextlib.suppress(
        anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError
    ):
        while True:
            await target.send(await source.receive(CHUNK))
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await target.send_eof()


class _Session:
    def __init__(
        self, session_id: str, agent_id: str, allowed: tuple[str, ...], path: Path
    ) -> None:
        self.session_id = session_id
        self.agent_id = agent_id
        self.allowed = allowed
        self.path = path
        self.scope = anyio.CancelScope()


class EgressProxy:
    """The sandboxes' sockets, served in ``run``'s task group: per session its egress
    proxy (``open``) and its client-tools MCP relay (``open_mcp``)."""

    def __init__(self) -> None:
        self._tg: TaskGroup | None = None
        self._sessions: dict[tuple[str, str], _Session] = {}  # (kind, session id)
        self._directory: Path | None = None
        self._count = 0

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        # A short private folder: a Unix socket's path has at most 107 bytes.
        self._directory = Path(tempfile.mkdtemp(prefix="agent-egress-"))
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                task_status.started()
                await anyio.sleep_forever()
        finally:
            self._tg = None
            for kind, session_id in list(self._sessions):
                self._close(kind, session_id)
            with contextlib.suppress(OSError):
                self._directory.rmdir()

    async def open(self, session_id: str, agent_id: str, allowed: tuple[str, ...]) -> Path:
        """Start the session's egress socket; its path (to bind into the sandbox)."""
        return await self._open("egress", session_id, agent_id, allowed, self._handle)

    async def open_mcp(self, session_id: str, agent_id: str, host: str, port: int) -> Path:
        """Start the session's MCP relay socket: each connection carries one request for
        ``/mcp/sessions/<session_id>`` to this server at ``host:port``; nothing else."""

        async def handle(session: _Session, client: SocketStream) -> None:
            await relay_mcp(session, client, host, port)

        return await self._open("mcp", session_id, agent_id, (), handle)

    async def _open(
        self,
        kind: str,
        session_id: str,
        agent_id: str,
        allowed: tuple[str, ...],
        handle: Callable[[_Session, SocketStream], Awaitable[None]],
    ) -> Path:
        if self._tg is None or self._directory is None:
            raise RuntimeError("the egress proxy is not running")
        self._close(kind, session_id)
        self._count += 1
        path = self._directory / f"{self._count}.sock"
        listener = await anyio.create_unix_listener(path)
        os.chmod(path, 0o600)
        session = _Session(session_id, agent_id, allowed, path)
        self._sessions[kind, session_id] = session
        self._tg.start_soon(self._serve, session, listener, handle)
        return path

    def close(self, session_id: str) -> None:
        """End the session's sockets (its agent is gone)."""
        for kind in ("egress", "mcp"):
            self._close(kind, session_id)

    def _close(self, kind: str, session_id: str) -> None:
        session = self._sessions.pop((kind, session_id), None)
        if session is not None:
            session.scope.cancel()
            with contextlib.suppress(OSError):
                session.path.unlink()

    async def _serve(
        self,
        session: _Session,
        listener: anyio.abc.Listener[SocketStream],
        handle: Callable[[_Session, SocketStream], Awaitable[None]],
    ) -> None:
        with session.scope:
            async with listener, anyio.create_task_group() as tg:
                await listener.serve(lambda client: handle(session, client), tg)

    async def _handle(self, session: _Session, client: SocketStream) -> None:
        async with client:
            head = await _read_head(client)
            if head is None:
                return
            end = head.find(b"\r\n\r\n")
            parsed = parse_head(head[: end + 4]) if end >= 0 else None
            if parsed is None:
                await _answer(client, 400, "Bad Request")
                return
            method, host, port, upstream_head = parsed
            if not host_allowed(host, session.allowed):
                metrics.refused_egress(session.agent_id)
                await _refuse(
                    client,
                    session,
                    "egress_refused",
                    f"egress refused: {host}",
                    host=host,
                    port=port,
                )
                return
            rest = head[end + 4 :]
            if method == "CONNECT":
                await _splice(client, host, port, rest, reply=ESTABLISHED)
            else:
                await _splice(client, host, port, upstream_head + rest)


async def _read_head(client: SocketStream) -> bytes | None:
    """What came before the end of the request head (and maybe after it); None when the
    client went away first."""
    head = b""
    with anyio.move_on_after(HEAD_TIMEOUT):
        while b"\r\n\r\n" not in head and len(head) < MAX_HEAD:
            try:
                head += await client.receive(CHUNK)
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                return None
    return head


def mcp_head(head: bytes, session_id: str) -> bytes | None:
    """The head of a request for the session's own MCP path, with ``Connection: close``
    (so the next request comes on a new connection, checked again); None for anything
    else (another path, another session's, a method MCP does not use)."""
    line, sep, rest = head.partition(b"\r\n")
    parts = line.decode("latin-1").split(" ")
    if len(parts) != 3 or parts[2] not in ("HTTP/1.1", "HTTP/1.0"):
        return None
    method, target, _ = parts
    path = target.partition("?")[0]
    if method not in MCP_METHODS or path != f"/mcp/sessions/{session_id}":
        return None
    fields = [
        f
        for f in rest.split(b"\r\n")
        if f and f.split(b":", 1)[0].strip().lower() not in (b"connection", b"keep-alive")
    ]
    return b"\r\n".join([line, *fields, b"Connection: close"]) + sep + b"\r\n"


async def relay_mcp(session: _Session, client: SocketStream, host: str, port: int) -> None:
    """One request of the sandboxed agent's MCP client, carried to this server's own port
    when it is for its session's MCP path; anything else is refused with 403 and logged."""
    async with client:
        head = await _read_head(client)
        if head is None:
            return
        end = head.find(b"\r\n\r\n")
        upstream_head = mcp_head(head[: end + 2], session.session_id) if end >= 0 else None
        if upstream_head is None:
            await _refuse(client, session, "mcp_relay_refused", "mcp relay refused a request")
            return
        await _splice(client, host, port, upstream_head + head[end + 4 :])


async def _refuse(
    client: SocketStream, session: _Session, event: str, message: str, **fields: Any
) -> None:
    """403, and a warning naming the session; ``event`` says what refused it."""
    extra = {"event": event, **fields}
    extra |= {"session_id": session.session_id, "agent_id": session.agent_id}
    log.warning(message, extra=extra)
    await _answer(client, 403, "Forbidden")


async def _splice(
    client: SocketStream, host: str, port: int, first: bytes, *, reply: bytes = b""
) -> None:
    """Connect to ``host:port`` (502 if that fails), send ``reply`` to the client and
    ``first`` upstream, then copy both ways until both sides are done."""
    try:
        with anyio.fail_after(CONNECT_TIMEOUT):
            upstream = await anyio.connect_tcp(host, port)
    except (OSError, TimeoutError):
        await _answer(client, 502, "Bad Gateway")
        return
    async with upstream:
        if reply:
            await client.send(reply)
        if first:
            await upstream.send(first)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_copy, upstream, client)
            await _copy(client, upstream)


async def _answer(client: SocketStream, status: int, reason: str) -> None:
    body = f"{status} {reason}: refused by the agent-sessions egress proxy\n".encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await client.send(head + body)
