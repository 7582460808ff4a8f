"""Who is asking, and may they: the middleware in front of every route and WebSocket.

It finds the actor of a request, in this order:
- ``Authorization: Bearer <secret>`` (a WebSocket may pass ``?token=`` instead; plain
  HTTP may not: tokens in URLs end up in histories and proxy logs): ``API_TOKEN`` is the
  server's admin, an ``as_`` token a user's, read from the database on every request (a
  revoked or expired token is refused at once);
- the sign-in cookie a browser got from ``POST /api/login`` (also read every time);
- ``AUTH_PROXY_HEADER``, believed only with ``X-Auth-Proxy-Secret: <AUTH_PROXY_SECRET>``.

With no ``API_TOKEN``, no user and no signing-in proxy, a request without a credential acts
as the server's admin: the server works as it always did on loopback. Otherwise it has
no actor, and only the ``open`` operations of ``server.web.access`` answer it.

Then it looks up the operation's rule (``server.web.access.OPERATIONS``, by the route's
method and path) and applies it: 401 (WebSocket 4401), 403 (4403) or 404 (4404). The actor
goes to the route (``current_actor()``, ``scope["state"]["actor"]``).

Wrong secrets are counted per client address (``server.web.signins``): logged with the
address, refused with 429 after ten a minute. No secret is ever logged: the path is
logged without its query, and headers never.
"""

from __future__ import annotations

import hmac
import logging

from starlette.requests import HTTPConnection
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send

from server.sessions import SERVER_ADMIN, Actor, acting
from server.settings import Settings
from server.web.access import Rule, authorize, rule_for, unauthorized
from server.web.errors import ApiError, error_response
from server.web.security import CLOSE_FORBIDDEN, CLOSE_UNAUTHORIZED, close_websocket, needs_token
from server.web.state import AppState

__all__ = [
    "COOKIE",
    "PROXY_SECRET_HEADER",
    "AuthMiddleware",
    "client_address",
    "forwarded_credentials",
]

log = logging.getLogger("agent_sessions.security")

COOKIE = "agent_sessions_login"
PROXY_SECRET_HEADER = "x-auth-proxy-secret"  # noqa: S105 - a header name
CLOSE_NOT_FOUND = 4404
_WS_CLOSE = {401: CLOSE_UNAUTHORIZED, 403: CLOSE_FORBIDDEN, 404: CLOSE_NOT_FOUND}


def client_address(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def _bearer(conn: HTTPConnection, allow_query: bool) -> str | None:
    """The bearer secret ("" for a malformed Authorization), None when none was sent."""
    values = conn.headers.getlist("authorization")
    if len(values) > 1:
        return ""
    if values:
        scheme, _, value = values[0].strip().partition(" ")
        value = value.strip()
        if scheme.lower() != "bearer" or not value:
            return ""
        # Starlette decodes headers as latin-1: back to the bytes sent, read as UTF-8.
        return value.encode("latin-1").decode("utf-8", "surrogateescape")
    if allow_query:
        tokens = conn.query_params.getlist("token")
        if len(tokens) > 1:
            return ""
        if tokens and tokens[0]:
            return tokens[0]
    return None


def _route(scope: Scope) -> tuple[str, dict[str, str]] | None:
    """The path of the app's route that fully matches (method included), and its params."""
    app = scope.get("app")
    for route in getattr(app, "routes", ()):
        match, child = route.matches(scope)
        if match is Match.FULL:
            params = {k: str(v) for k, v in child.get("path_params", {}).items()}
            return route.path, params
    return None


class AuthMiddleware:
    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        state = getattr(scope["app"].state, "agent_sessions", None)
        if state is None:  # before the lifespan: nothing but the static routes answers
            await self.app(scope, receive, send)
            return
        route = _route(scope)
        method = "GET" if kind == "websocket" else scope["method"]
        rule = rule_for(method, route[0]) if route is not None else None
        if rule is not None and rule.scope == "open":  # a credential, right or wrong, is moot
            await self.app(scope, receive, send)
            return
        try:
            actor = await self._actor(state, scope, kind == "websocket")
            if route is not None:
                if rule is None:
                    log.error("a route without an access rule", extra={"path": route[0]})
                    raise ApiError(403, "forbidden", "This operation has no access rule.")
                await authorize(state, actor, rule, route[1])
            elif needs_token(scope["path"]):  # no such route (404), or a wrong method (405)
                await authorize(state, actor, Rule(), {})
        except ApiError as refusal:
            await self._refuse(scope, receive, send, refusal)
            return
        scope.setdefault("state", {})["actor"] = actor
        with acting(actor):
            await self.app(scope, receive, send)

    async def _actor(self, state: AppState, scope: Scope, websocket: bool) -> Actor | None:
        users = state.users
        conn = HTTPConnection(scope)
        address = client_address(scope)
        given = _bearer(conn, allow_query=websocket)
        if given is not None:
            state.signins.check(address)
            actor = await users.actor_of_token(given) if given else None
            if actor is not None:
                return actor
            if not await self._required(state):
                return SERVER_ADMIN  # no token configured: one sent is ignored, as before
            state.signins.failed(address, scope["path"], "token")
            raise unauthorized()
        cookie = conn.cookies.get(COOKIE)
        if cookie:
            actor = await users.actor_of_login(cookie)
            if actor is not None:
                return actor
        proxy = self._proxy_name(conn)
        if proxy is not None:
            actor = await users.actor_of_proxy(proxy)
            if actor is None:
                log.warning(
                    "a signing-in proxy named an unknown user",
                    extra={"event": "proxy_user_unknown", "user": proxy, "client": address},
                )
                raise ApiError(403, "forbidden", f"No user named {proxy!r}.")
            return actor
        return None if await self._required(state) else SERVER_ADMIN

    async def _required(self, state: AppState) -> bool:
        """Whether a request needs a credential: a token, a proxy or a user exists."""
        settings = self.settings
        if settings.api_token or settings.auth_proxy_header:
            return True
        return await state.users.any_user()

    def _proxy_name(self, conn: HTTPConnection) -> str | None:
        header, secret = self.settings.auth_proxy_header, self.settings.auth_proxy_secret
        if not header:
            return None
        names = conn.headers.getlist(header)
        if not names:
            return None
        proofs = conn.headers.getlist(PROXY_SECRET_HEADER)
        proven = (
            secret is not None
            and len(proofs) == 1
            and hmac.compare_digest(proofs[0].encode("latin-1"), secret.encode("utf-8"))
        )
        if not proven or len(names) != 1 or not names[0].strip():
            log.warning(
                "ignored a user header without the proxy's secret",
                extra={"event": "proxy_unproven", "client": client_address(conn.scope)},
            )
            return None
        return names[0].strip()

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, refusal: ApiError) -> None:
        if refusal.status in (401, 403):
            log.warning(
                "refused a request: %s",
                refusal.code,
                extra={
                    "event": refusal.code,
                    "path": scope["path"],
                    "client": client_address(scope),
                },
            )
        if scope["type"] == "websocket":
            code = _WS_CLOSE.get(refusal.status, CLOSE_FORBIDDEN)
            await close_websocket(receive, send, code, refusal.code.replace("_", " "))
            return
        response = error_response(
            refusal.status, refusal.code, refusal.message, refusal.details, refusal.headers
        )
        await response(scope, receive, send)


def forwarded_credentials(conn: HTTPConnection, settings: Settings) -> dict[str, str]:
    """The headers that carry a WebSocket's credential to the node a command is forwarded
    to (its token, as a header there; its sign-in cookie; a proxy's user and proof), so
    the owner acts for the same person; API_TOKEN when it brought none (no users)."""
    headers: dict[str, str] = {}
    given = _bearer(conn, allow_query=True)
    if given:
        headers["authorization"] = f"Bearer {given}"
    cookie = conn.headers.get("cookie")
    if cookie:
        headers["cookie"] = cookie
    if settings.auth_proxy_header:
        for name in (settings.auth_proxy_header, PROXY_SECRET_HEADER):
            value = conn.headers.get(name)
            if value is not None:
                headers[name] = value
    if not headers and settings.api_token:
        headers["authorization"] = f"Bearer {settings.api_token}"
    return headers
