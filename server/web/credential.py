"""An open WebSocket's credential: it ends the socket (4401) as soon as the token or
sign-in it was opened with is revoked (here or, through the cluster, on another node),
its user removed, or its token expires."""

from __future__ import annotations

import time

import anyio
from starlette.websockets import WebSocket

from server.sessions import Actor, Revocations
from server.web.security import CLOSE_UNAUTHORIZED

__all__ = ["Credential", "until_revoked"]


class Credential:
    def __init__(self, actor: Actor | None, revocations: Revocations) -> None:
        self.actor = actor
        self.revoked = anyio.Event()
        keys = actor.keys if actor is not None else ()
        self.unwatch = revocations.watch(keys, self.revoked.set) if keys else lambda: None

    @classmethod
    def of(cls, websocket: WebSocket, revocations: Revocations) -> Credential:
        actor = websocket.scope.get("state", {}).get("actor")
        return cls(actor if isinstance(actor, Actor) else None, revocations)

    def seconds_left(self) -> float:
        expires = self.actor.expires_at if self.actor is not None else None
        return float("inf") if expires is None else max(0.0, expires - time.time())


async def until_revoked(
    websocket: WebSocket, credential: Credential, scope: anyio.CancelScope
) -> None:
    """Wait for the revocation or the expiry, then close with 4401 and end the stream."""
    with anyio.move_on_after(credential.seconds_left()):
        await credential.revoked.wait()
    try:
        await websocket.close(CLOSE_UNAUTHORIZED, "unauthorized")
    except (RuntimeError, OSError):
        pass  # already closing
    scope.cancel()
