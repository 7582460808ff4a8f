"""Commands for a session owned by another live node are forwarded to that node."""

from __future__ import annotations

import logging

import httpx
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from server.cluster import Cluster, command_target
from server.web.errors import error_response

__all__ = ["ForwardingMiddleware"]

log = logging.getLogger("agent_sessions.cluster")

_PASSED_HEADERS = ("content-type", "retry-after", "www-authenticate", "x-request-id")


class ForwardingMiddleware:
    """Commands for a session owned by another live node go to that node; the caller
    gets the owner's status code and body, as on one node."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = scope.get("app")
        state = getattr(app.state, "agent_sessions", None) if app is not None else None
        cluster: Cluster | None = getattr(state, "cluster", None)
        if (
            scope["type"] != "http"
            or cluster is None
            or not cluster.enabled
            or scope["method"] not in ("POST", "DELETE")
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
        except httpx.HTTPError:
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
