"""Who may reach the server and how much they may send: the bearer token, the Origin
check, and the request body limit. Three small ASGI middlewares, so that every route is
covered, also one added later or one that never reads its body.

Policy (API.md, Security; the decisions API.md leaves open are marked *):

- Token. Who is asking and what they may do is ``server.web.auth`` and
  ``server.web.access`` (API.md "Users and access"); this module keeps the WebSocket
  refusal they share (accepted, then closed with 4401 / 4403 before any data).
- Origin. A WebSocket handshake, or an ``/api`` request, that carries an ``Origin`` must
  name the server's own origin (the scheme the request came in on and its ``Host``) or one
  of ``ALLOWED_ORIGINS``; otherwise 4403 / 403 ``forbidden_origin``. Browsers always send
  ``Origin`` on WebSocket handshakes and on cross-site POST/DELETE, so a page on another
  site can neither open the stream nor drive the API (*: the API check goes beyond
  API.md's WebSocket rule; it stops form-style cross-site POSTs, which need no CORS
  preflight). No ``Origin`` means a non-browser client: the token governs those. Matching
  is on the serialized origin ``scheme://host:port``: scheme and host compare
  case-insensitively and a default port equals no port (RFC 6454); anything else is a
  different origin and refused: ``null``, other schemes (``https`` for an ``http`` server),
  other ports, a trailing dot (``localhost.``), suffixes (``http://127.0.0.1:8000.evil.com``),
  user info, paths, several Origin headers, and non-ASCII hosts. There is no CORS: the
  server never sends ``Access-Control-Allow-Origin``.
- Body limit. A request body over ``MAX_BODY_BYTES`` gets 413 ``payload_too_large``:
  at once when its ``Content-Length`` says so, otherwise as soon as the bytes read pass
  the limit (chunked bodies too). The body is read here, before routing, so a route that
  never reads its body is covered as well; the app then gets it from memory.

Every refusal is logged on ``agent_sessions.security`` as a security event.
"""

from __future__ import annotations

import logging
import re

from starlette.datastructures import Headers
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.settings import Settings
from server.web.errors import error_response

__all__ = [
    "BodyLimitMiddleware",
    "OriginMiddleware",
    "close_websocket",
    "needs_token",
    "normalize_origin",
    "origin_allowed",
]

log = logging.getLogger("agent_sessions.security")

TOKEN_PREFIXES = ("/api", "/ws", "/metrics")
ORIGIN_PREFIXES = ("/api", "/ws")
CLOSE_UNAUTHORIZED = 4401
CLOSE_FORBIDDEN = 4403

_DEFAULT_PORTS = {"http": 80, "https": 443}
_ORIGIN = re.compile(
    r"(?P<scheme>https?)://(?P<host>[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\])"
    r"(?::(?P<port>[0-9]{1,5}))?",
    re.ASCII,
)


def _under(path: str, prefixes: tuple[str, ...]) -> bool:
    return any(path == p or path.startswith(p + "/") for p in prefixes)


def needs_token(path: str) -> bool:
    """Whether a request for ``path`` needs the token (when one is configured)."""
    return _under(path, TOKEN_PREFIXES)


# -- origin ---------------------------------------------------------------------------


def normalize_origin(value: str) -> str | None:
    """``scheme://host:port`` in lower case with the port spelled out, or None when
    ``value`` is not a plain http(s) origin."""
    match = _ORIGIN.fullmatch(value.lower())
    if match is None:
        return None
    scheme, host = match["scheme"], match["host"]
    port = int(match["port"]) if match["port"] is not None else _DEFAULT_PORTS[scheme]
    if not 0 < port < 65536:
        return None
    return f"{scheme}://{host}:{port}"


def _own_origin(conn: HTTPConnection) -> str | None:
    hosts = conn.headers.getlist("host")
    if len(hosts) != 1:
        return None
    scheme = "https" if conn.url.scheme in ("https", "wss") else "http"
    return normalize_origin(f"{scheme}://{hosts[0]}")


def origin_allowed(conn: HTTPConnection, settings: Settings) -> bool:
    """No Origin (not a browser), our own origin, or one listed in ALLOWED_ORIGINS."""
    origins = conn.headers.getlist("origin")
    if not origins:
        return True
    if len(origins) > 1:
        return False
    origin = normalize_origin(origins[0].strip(" \t"))  # optional whitespace (RFC 9110)
    if origin is None:
        return False
    if origin == _own_origin(conn):
        return True
    return any(origin == normalize_origin(allowed) for allowed in settings.allowed_origins)


# -- refusing -------------------------------------------------------------------------


def _client(scope: Scope) -> str | None:
    client = scope.get("client")
    return str(client[0]) if client else None


async def close_websocket(receive: Receive, send: Send, code: int, reason: str) -> None:
    """Accept the handshake, then close with ``code`` before any data frame."""
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    await send({"type": "websocket.accept"})
    await send({"type": "websocket.close", "code": code, "reason": reason})


async def _refuse(
    scope: Scope,
    receive: Receive,
    send: Send,
    logged: tuple[str, str],
    status: tuple[int, str],
    message: str,
    details: dict[str, str],
) -> None:
    """Log a refusal on the security logger, then close a WebSocket with 4403 or answer
    an HTTP request with the error body (``status`` is the HTTP status and code)."""
    text, event = logged
    extra = {"event": event, **details, "path": scope["path"], "client": _client(scope)}
    log.warning(text, extra=extra)
    if scope["type"] == "websocket":
        await close_websocket(receive, send, CLOSE_FORBIDDEN, event.replace("_", " "))
        return
    await error_response(*status, message, details)(scope, receive, send)


def host_name(value: str) -> str:
    """The host of a ``Host`` header value, lower-cased, without port or brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    name, colon, port = value.rpartition(":")
    return name if colon and port.isdigit() else value


class HostMiddleware:
    """``Host`` must name this server (ALLOWED_HOSTS): a page on another site that
    rebinds its DNS name to a loopback address still sends its own name, and is refused
    (421 ``misdirected_request``; a WebSocket is closed with 4403) before any route runs."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.accepted = settings.accepted_hosts()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket") or self.accepted is None:
            await self.app(scope, receive, send)
            return
        hosts = HTTPConnection(scope).headers.getlist("host")
        if not hosts or (len(hosts) == 1 and host_name(hosts[0]) in self.accepted):
            await self.app(scope, receive, send)
            return
        host = ", ".join(hosts)[:200]
        await _refuse(
            scope,
            receive,
            send,
            ("refused a request for a host this server does not serve", "host_not_allowed"),
            (421, "misdirected_request"),
            "This server does not answer for that host name (see ALLOWED_HOSTS).",
            {"host": host},
        )


# The UI is same-origin ES modules and one stylesheet: nothing inline, nothing foreign,
# never framed. Sent on every HTTP response (an API answer is no page either).
SECURITY_HEADERS: list[tuple[bytes, bytes]] = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
        b"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
        b"frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


class SecurityHeadersMiddleware:
    """Adds SECURITY_HEADERS to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(n, v) for n, v in SECURITY_HEADERS if n not in names]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


class OriginMiddleware:
    """Browsers' requests from other origins on /api (403) and /ws (4403)."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket") or not _under(scope["path"], ORIGIN_PREFIXES):
            await self.app(scope, receive, send)
            return
        conn = HTTPConnection(scope)
        if origin_allowed(conn, self.settings):
            await self.app(scope, receive, send)
            return
        origin = ", ".join(conn.headers.getlist("origin"))
        await _refuse(
            scope,
            receive,
            send,
            ("refused a request from a forbidden origin", "forbidden_origin"),
            (403, "forbidden_origin"),
            "Requests from this origin are not allowed.",
            {"origin": origin},
        )


_PROMPT_PATH = re.compile(r"^/api/sessions/[^/]+/prompt/?$")


class BodyLimitMiddleware:
    """413 for a body over ``MAX_BODY_BYTES``, declared or not (see the module docstring);
    a prompt's body may hold an image at its limit (``Settings.max_prompt_body_bytes``)."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.body_limit = settings.max_body_bytes
        self.prompt_limit = settings.max_prompt_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        prompt = scope["method"] == "POST" and _PROMPT_PATH.match(scope["path"])
        limit = self.prompt_limit if prompt else self.body_limit
        declared = Headers(scope=scope).get("content-length", "").strip()
        if declared.isdigit() and int(declared) > limit:
            await self._refuse(scope, receive, send, limit, declared=True)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                await self.app(scope, _replay([message], receive), send)
                return
            body += message.get("body", b"")
            if len(body) > limit:
                await self._refuse(scope, receive, send, limit, declared=False)
                return
            if not message.get("more_body", False):
                break
        first: Message = {"type": "http.request", "body": bytes(body), "more_body": False}
        await self.app(scope, _replay([first], receive), send)

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, limit: int, *, declared: bool
    ) -> None:
        log.warning(
            "refused a request body over the limit",
            extra={
                "event": "body_too_large",
                "path": scope["path"],
                "limit": limit,
                "declared": declared,
                "client": _client(scope),
            },
        )
        response = error_response(
            413,
            "payload_too_large",
            f"The request body is larger than {limit} bytes.",
            {"limit": limit},
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A receive that first returns ``messages``, then defers to ``receive``."""
    queue = list(messages)

    async def replay() -> Message:
        if queue:
            return queue.pop(0)
        return await receive()

    return replay
