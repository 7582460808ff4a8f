"""Who may reach the server: the bearer token on /api and /ws, and the Origin check for
WebSocket handshakes."""

from __future__ import annotations

import hmac
import logging

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from server.errors import error_response
from server.settings import Settings

__all__ = ["TokenMiddleware", "origin_allowed", "token_ok"]

log = logging.getLogger("agent_sessions.security")


def _bearer(conn: HTTPConnection) -> str | None:
    header = conn.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def token_ok(conn: HTTPConnection, settings: Settings, *, allow_query: bool) -> bool:
    """Constant-time check of the request's token (header, or ?token= for WebSockets)."""
    if not settings.api_token:
        return True
    given = _bearer(conn)
    if given is None and allow_query:
        given = conn.query_params.get("token")
    if given is None:
        return False
    return hmac.compare_digest(given.encode(), settings.api_token.encode())


def origin_allowed(conn: HTTPConnection, settings: Settings) -> bool:
    """No Origin (not a browser), our own origin, or one listed in ALLOWED_ORIGINS."""
    origin = conn.headers.get("origin")
    if origin is None:
        return True
    origin = origin.strip().rstrip("/")
    host = conn.headers.get("host", "")
    own = {f"http://{host}", f"https://{host}"} if host else set()
    return origin in own or origin in settings.allowed_origins


class TokenMiddleware:
    """401 with ``WWW-Authenticate: Bearer`` for /api requests without the token.
    (WebSockets check it themselves, to close with 4401 after the handshake.)"""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and self.settings.api_token
            and (scope["path"] == "/api" or scope["path"].startswith("/api/"))
        ):
            conn = HTTPConnection(scope)
            if not token_ok(conn, self.settings, allow_query=False):
                log.warning("request without a valid token", extra={"event": "unauthorized", "path": scope["path"]})
                response = error_response(
                    401, "unauthorized", "A valid bearer token is required.",
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


