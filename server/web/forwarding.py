"""Commands for a session owned by another live node are forwarded to that node.

The forwarding header (``x-agent-sessions-forwarded``) tells a node "another node sent this
here: run it yourself, do not forward it again". It is trusted only from a node that proves
the shared ``CLUSTER_SECRET``; a request carrying it without that proof (no secret set on
this node, or a wrong or missing ``x-cluster-secret``) is refused with 403
``forwarding_refused`` before any route runs, so a client cannot make a node act on a
session another node runs. Without ``CLUSTER_SECRET`` nodes forward without the header and
the owner recognises the command as its own by the lease.
"""

from __future__ import annotations

import hmac
import logging

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from server.cluster import FORWARDED, SECRET, Cluster, OwnerUnreachable, command_target
from server.settings import Settings
from server.web.errors import error_response

__all__ = ["ForwardingMiddleware"]

log = logging.getLogger("agent_sessions.cluster")
security_log = logging.getLogger("agent_sessions.security")

_PASSED_HEADERS = ("content-type", "retry-after", "www-authenticate", "x-request-id")


class ForwardingMiddleware:
    """Commands for a session owned by another live node go to that node; the caller
    gets the owner's status code and body, as on one node."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.secret = settings.cluster_secret

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._trusted(Headers(scope=scope)):
            security_log.warning(
                "refused a forwarded request without the cluster secret",
                extra={"event": "forwarding_refused", "path": scope["path"]},
            )
            refused = error_response(
                403,
                "forwarding_refused",
                "Forwarded requests are accepted only from nodes that share CLUSTER_SECRET.",
            )
            await refused(scope, receive, send)
            return
        app = scope.get("app")
        state = getattr(app.state, "agent_sessions", None) if app is not None else None
        cluster: Cluster | None = getattr(state, "cluster", None)
        if (
            scope["type"] != "http"
            or cluster is None
            or not cluster.enabled
            or scope["method"] not in ("POST", "PUT", "DELETE")
        ):
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        session_id = await command_target(cluster, scope["method"], scope["path"])
        if session_id is None or cluster.is_forwarded(request.headers):
            await self.app(scope, receive, send)
            return
        owner = await cluster.owner_url(session_id)
        if owner is None:
            await self.app(scope, receive, send)
            return
        body = await request.body()
        try:
            answer = await cluster.forward(
                owner,
                scope["method"],
                scope["path"],
                scope["query_string"].decode(),
                dict(request.headers),
                body,
            )
        except OwnerUnreachable:
            log.warning("owner node unreachable", extra={"session_id": session_id, "owner": owner})
            response: Response = error_response(
                503,
                "owner_unavailable",
                "The node running this session does not answer; retry shortly.",
            )
        else:
            headers = {k: v for k, v in answer.headers.items() if k.lower() in _PASSED_HEADERS}
            response = Response(answer.content, status_code=answer.status_code, headers=headers)
        await response(scope, receive, send)

    def _trusted(self, headers: Headers) -> bool:
        """No forwarding header, or one that comes with this node's CLUSTER_SECRET."""
        if FORWARDED not in headers:
            return True
        if not self.secret:
            return False
        proof = headers.get(SECRET, "").encode()
        return hmac.compare_digest(proof, self.secret.encode())
