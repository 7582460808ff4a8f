"""A node's LISTEN connection: the announcements of the other nodes' commits.

It may fail at any moment (its backend terminated, the database restarting or refusing
connections, the network gone silent). The node keeps serving meanwhile: the listener
reconnects with backoff (0.1 s, doubling to 5 s) and, once it LISTENs again, calls
``on_restored``; the cluster then closes its viewers as fallen behind (4008), and they
catch up from the database with their cursor, so what was committed while nobody listened
reaches them with no gap. A connection that dies without a word is found by a ping.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio
from anyio.abc import TaskStatus

from server.settings import CLEANUP_SECONDS

__all__ = ["Listener"]

log = logging.getLogger("agent_sessions.cluster")

BACKOFF_FIRST = 0.1
BACKOFF_MAX = 5.0
CONNECT_TIMEOUT = 10.0
PING_INTERVAL = 10.0  # a silent connection is noticed within this plus PING_TIMEOUT
PING_TIMEOUT = 5.0


class Listener:
    def __init__(
        self,
        url: str,
        channel: str,
        node_id: str,
        on_notification: Callable[[str], None],
        on_restored: Callable[[], None],
    ) -> None:
        self.url = url.replace("postgresql+asyncpg://", "postgresql://")
        self.channel = channel
        self.application_name = f"agent-sessions listen {node_id}"[:63]  # NAMEDATALEN - 1
        self.on_notification = on_notification
        self.on_restored = on_restored
        self.troubled = False  # a connection was lost or refused since the last LISTEN
        self.connections = 0  # successful LISTENs so far (for tests and logs)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """LISTEN for ever; ``task_status.started()`` after the first attempt either way."""
        import asyncpg  # only with a PostgreSQL URL (a SQLite start never gets here)

        delay = BACKOFF_FIRST
        started = False
        while True:
            try:
                conn = await asyncpg.connect(
                    self.url,
                    timeout=CONNECT_TIMEOUT,
                    server_settings={"application_name": self.application_name},
                )
            except Exception as exc:  # noqa: BLE001 - any failure to connect is retried
                self.troubled = True
                log.warning(
                    "LISTEN connection failed (%s); retrying in %.1f s",
                    type(exc).__name__,
                    delay,
                    extra={"event": "listen_failed"},
                )
                if not started:
                    task_status.started()
                    started = True
                await anyio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX)
                continue
            before = self.connections
            try:
                await self._serve(conn, None if started else task_status)
            except Exception as exc:  # noqa: BLE001 - a broken connection: reconnect
                log.warning(
                    "LISTEN connection broke (%s)",
                    type(exc).__name__,
                    extra={"event": "listen_lost"},
                )
            finally:
                await self._close(conn)
            if self.connections > before:  # it worked for a while: retry soon
                started = True
                delay = BACKOFF_FIRST
            if not started:
                task_status.started()
                started = True
            self.troubled = True
            log.warning(
                "LISTEN connection lost; reconnecting in %.1f s",
                delay,
                extra={"event": "listen_lost"},
            )
            await anyio.sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX)

    async def _serve(self, conn: Any, task_status: TaskStatus[None] | None) -> None:
        """LISTEN on ``conn`` until it is lost (returns) or breaks (raises)."""
        lost = anyio.Event()
        conn.add_termination_listener(lambda _conn: lost.set())
        await conn.add_listener(self.channel, self._notified)
        self.connections += 1
        if task_status is not None:
            task_status.started()
        if self.troubled:
            self.troubled = False
            log.info("LISTEN connection restored", extra={"event": "listen_restored"})
            self.on_restored()
        while not lost.is_set():
            with anyio.move_on_after(PING_INTERVAL):
                await lost.wait()
            if not lost.is_set():
                with anyio.fail_after(PING_TIMEOUT):
                    await conn.fetchval("SELECT 1")

    def _notified(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        try:
            self.on_notification(payload)
        except Exception:  # noqa: BLE001 - a payload we cannot read is no reason to stop
            log.exception("unreadable notification %r", payload[:200])

    async def _close(self, conn: Any) -> None:
        with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
            try:
                if not conn.is_closed():
                    await conn.close(timeout=CLEANUP_SECONDS)
            except Exception:  # noqa: BLE001 - already broken: drop it
                conn.terminate()
