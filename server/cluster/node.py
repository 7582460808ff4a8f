"""Several server nodes sharing one PostgreSQL (scale-out).

PostgreSQL is the coordination engine, nothing else:
- every node registers itself in ``nodes`` and renews a heartbeat;
- the node running a session's agent owns it through a ``session_owners`` row whose
  lease its heartbeat renews; an expired lease is taken over (its running runs become
  ``interrupted``) and released, so the next command starts the agent wherever it lands;
- every commit NOTIFYs ``(node, session, first seq, last seq)``; every node LISTENs and
  feeds its own viewers of sessions owned elsewhere *from the database*, so the stream
  keeps its guarantees (stored before visible, no gap, no duplicate);
- commands for a session owned by another live node are forwarded to it over HTTP.

With SQLite the cluster is disabled: one node owns everything.
"""

from __future__ import annotations

import logging
import re
import socket
from collections import deque
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskStatus
from sqlalchemy.ext.asyncio import AsyncSession

from server.cluster.listener import Listener
from server.settings import CLEANUP_SECONDS, Settings
from server.stream.broker import Broker
from server.stream.frames import stored_frame
from store import Database, utcnow
from store import cluster as cluster_store
from store import replay as replay_store
from store import runs as run_store

if TYPE_CHECKING:  # imported when clustering starts: a plain start does not need httpx
    import httpx

__all__ = ["CHANNEL", "FORWARDED", "SECRET", "Cluster", "OwnerUnreachable", "command_target"]

log = logging.getLogger("agent_sessions.cluster")

CHANNEL = "agent_sessions"
FORWARDED = "x-agent-sessions-forwarded"
SECRET = "x-cluster-secret"  # noqa: S105 - a header name, not a secret
_UUID = "[0-9a-fA-F-]{36}"
_SESSION_COMMAND = re.compile(
    rf"^/api/sessions/({_UUID})(/prompt|/cancel|/complete|/rewind|/permissions/[^/]+"
    r"|/elicitations/[^/]+|/changes|/commit|/merge|/worktree|/mode|/config/[^/]+)?$"
)  # worktrees: the owner's node has the files; mode, config and answers: its agent's
_RUN_RESUME = re.compile(rf"^/api/agent-runs/({_UUID})/resume$")


class OwnerUnreachable(Exception):
    """The node owning a session gave no answer to a forwarded command."""


class Cluster:
    def __init__(
        self,
        settings: Settings,
        database: Database,
        broker: Broker,
        on_takeover: Callable[[set[str]], Awaitable[None]] | None = None,
    ) -> None:
        self.enabled = database.dialect == "postgresql"
        self.db = database
        self.broker = broker
        self.node_id = settings.node_id or f"{socket.gethostname()}-{settings.port}"
        self.url = (settings.node_url or f"http://{settings.host}:{settings.port}").rstrip("/")
        self.lease = timedelta(seconds=settings.lease_seconds)
        self.secret = settings.cluster_secret
        self._published: dict[str, int] = {}
        self._notes: deque[tuple[str, int, int]] = deque()
        self._wake = anyio.Event()
        self._http: httpx.AsyncClient | None = None
        self.listener = Listener(
            database.url, CHANNEL, self.node_id, self._on_notification, self._drop_remote_viewers
        )
        # Interrupt the runs of the sessions whose owner died (the supervisor's recovery).
        self._on_takeover = on_takeover

    # -- lifetime ----------------------------------------------------------------------

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        if not self.enabled:
            task_status.started()
            return
        import httpx  # only a clustered node talks to other nodes

        await self._register()
        self._http = httpx.AsyncClient(timeout=httpx.Timeout(60, connect=5))
        try:
            async with anyio.create_task_group() as tg:
                await tg.start(self.listener.run)
                tg.start_soon(self._deliver_loop)
                tg.start_soon(self._heartbeat_loop)
                log.info(
                    "node registered",
                    extra={"event": "node_registered", "node_id": self.node_id, "url": self.url},
                )
                task_status.started()
        finally:
            with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
                await self._http.aclose()

    async def _register(self) -> None:
        now = utcnow()
        async with self.db.write() as db, db.begin():
            await cluster_store.register_node(db, self.node_id, self.url, now)

    # -- ownership ---------------------------------------------------------------------

    async def claim(self, session_id: str) -> str | None:
        """Own ``session_id`` (None) unless another node holds a valid lease (its URL)."""
        if not self.enabled:
            return None
        now = utcnow()
        async with self.db.write() as db, db.begin():
            if await cluster_store.claim_session(
                db, session_id, self.node_id, now, now + self.lease
            ):
                return None
            return await self._owner_url(db, session_id) or "unknown"

    async def owner_url(self, session_id: str) -> str | None:
        """The URL of another node holding a valid lease on the session, else None."""
        if not self.enabled:
            return None
        async with self.db.read() as db:
            return await self._owner_url(db, session_id)

    async def _owner_url(self, db: AsyncSession, session_id: str) -> str | None:
        return await cluster_store.other_owner_url(db, session_id, self.node_id, utcnow())

    async def release(self, session_id: str) -> None:
        if not self.enabled:
            return
        with anyio.move_on_after(CLEANUP_SECONDS, shield=True):  # else the lease expires
            async with self.db.write() as db, db.begin():
                await cluster_store.release_session(db, session_id, self.node_id)

    async def session_of_run(self, run_id: str) -> str | None:
        async with self.db.read() as db:
            return await run_store.session_of_run(db, run_id)

    async def _heartbeat_loop(self) -> None:
        interval = self.lease.total_seconds() / 3
        while True:
            try:
                await self._heartbeat()
                await self._take_over_expired()
            except Exception:
                log.exception("heartbeat failed")
            await anyio.sleep(interval)

    async def _heartbeat(self) -> None:
        now = utcnow()
        async with self.db.write() as db, db.begin():
            await cluster_store.renew_leases(db, self.node_id, now, now + self.lease)

    async def _take_over_expired(self) -> None:
        """Claim sessions whose owner stopped renewing, interrupt their runs, release them."""
        now = utcnow()
        async with self.db.write() as db, db.begin():
            expired = await cluster_store.expired_leases(db, now)
            if not expired:
                return
            ids = [row.session_id for row in expired]
            await cluster_store.claim_sessions(db, ids, self.node_id, now + self.lease)
        log.warning(
            "took over sessions of a node whose lease expired",
            extra={
                "event": "lease_takeover",
                "sessions": ids,
                "from": sorted({r.node_id for r in expired}),
            },
        )
        if self._on_takeover is not None:
            await self._on_takeover(set(ids))
        for session_id in ids:
            await self.release(session_id)

    # -- fan-out across nodes ----------------------------------------------------------

    async def notify(self, db: AsyncSession, spans: dict[str, tuple[int, int]]) -> None:
        """Inside the writer's transaction: announce (session, first, last) on commit."""
        channel, payloads = self.announcement(spans)
        await cluster_store.notify(db, channel, payloads)

    def announcement(self, spans: dict[str, tuple[int, int]]) -> tuple[str, list[str]]:
        """The channel and payloads of ``notify`` (the writer's hot path sends them)."""
        payloads = [
            f"{self.node_id} {session_id} {first} {last}"
            for session_id, (first, last) in spans.items()
        ]
        return CHANNEL, payloads

    def _on_notification(self, payload: str) -> None:
        node, session_id, first, last = payload.split(" ")
        if node != self.node_id and self.broker.has_subscribers(session_id):
            self._notes.append((session_id, int(first), int(last)))
            self._wake.set()

    async def _deliver_loop(self) -> None:
        while True:
            if not self._notes:
                await self._wake.wait()
                self._wake = anyio.Event()
                continue
            session_id, first, last = self._notes[0]
            cursor = self._published.get(session_id, first - 1)
            if last <= cursor:
                self._notes.popleft()
                continue
            try:
                async with self.db.read() as db:
                    rows = await replay_store.frame_rows(
                        db, session_id, cursor, limit=last - cursor, upto=last
                    )
            except Exception:  # noqa: BLE001 - the database is away: retry, keep the order
                log.exception("reading announced messages failed; retrying")
                await anyio.sleep(1)
                continue
            self._notes.popleft()
            frames = [(row.seq, stored_frame(row)) for row in rows]
            self.broker.publish(session_id, frames)
            self._published[session_id] = last

    def _drop_remote_viewers(self) -> None:
        self._published.clear()
        self.broker.close_all(reason="behind")

    # -- forwarding commands -----------------------------------------------------------

    def forwarded_headers(self, headers: dict[str, str]) -> dict[str, str]:
        out = {
            k: v
            for k, v in headers.items()
            if k.lower() in ("authorization", "content-type", "x-request-id")
        }
        if self.secret:  # without the secret the owner knows its own sessions by the lease
            out[FORWARDED] = self.node_id
            out[SECRET] = self.secret
        return out

    async def forward(
        self, owner: str, method: str, path: str, query: str, headers: dict[str, str], body: bytes
    ) -> httpx.Response:
        """The owner's answer; ``OwnerUnreachable`` when it does not give one."""
        import httpx

        assert self._http is not None
        url = f"{owner}{path}" + (f"?{query}" if query else "")
        try:
            return await self._http.request(
                method, url, headers=self.forwarded_headers(headers), content=body
            )
        except httpx.HTTPError as exc:
            raise OwnerUnreachable(owner) from exc

    def is_forwarded(self, headers: Any) -> bool:
        """Sent here by another node (ForwardingMiddleware refused the header unproven)."""
        return bool(self.secret) and headers.get(FORWARDED) is not None


async def command_target(cluster: Cluster, method: str, path: str) -> str | None:
    """The session a forwardable command (by method and path) is about, else None."""
    match = _SESSION_COMMAND.match(path)
    if match and (match.group(2) or method == "DELETE"):
        return match.group(1).lower()
    match = _RUN_RESUME.match(path)
    if match:
        return await cluster.session_of_run(match.group(1).lower())
    return None
