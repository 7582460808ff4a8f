"""The document itself: the operations the app serves, with the component schemas, and
the route that serves it."""

from __future__ import annotations

import re
from collections.abc import Iterable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route, WebSocketRoute

from server.web.jsonresp import JSONResponse
from server.web.openapi.paths_basic import BASIC
from server.web.openapi.paths_controls import control_paths
from server.web.openapi.paths_glance import glance_paths
from server.web.openapi.paths_mcp import mcp_paths
from server.web.openapi.paths_review import review_paths
from server.web.openapi.paths_runs import RUNS
from server.web.openapi.paths_sessions import SESSIONS
from server.web.openapi.paths_stats import STATS, STATS_SCHEMAS
from server.web.openapi.paths_workspaces import workspace_paths
from server.web.openapi.schemas import SCHEMAS, VERSION, Schema

__all__ = ["CATALOGUE", "document", "openapi_json", "route"]

CATALOGUE: dict[tuple[str, str], Schema] = {**BASIC, **SESSIONS, **RUNS, **STATS}
CATALOGUE.update(workspace_paths(CATALOGUE, SCHEMAS))  # API.md "Worktrees and changes"
CATALOGUE.update(control_paths(CATALOGUE, SCHEMAS))  # API.md "Agent controls"
CATALOGUE.update(mcp_paths(CATALOGUE, SCHEMAS))  # API.md "Agent controls", MCP servers
CATALOGUE.update(glance_paths(CATALOGUE, SCHEMAS))  # API.md "Finding and keeping sessions"
CATALOGUE.update(review_paths(CATALOGUE, SCHEMAS))  # API.md "Review"


_PARAM = re.compile(r"\{[^}]*\}")


def shape(path: str) -> str:
    """A path with its parameter names erased: ``/a/{session_id}`` → ``/a/{}``."""
    return _PARAM.sub("{}", path)


def served(routes: Iterable[BaseRoute]) -> set[tuple[str, str]]:
    """(method, path shape) of every route, HEAD left out (implied by GET); a WebSocket
    route counts as GET (its handshake)."""
    found = set()
    for r in routes:
        if isinstance(r, Route):
            found |= {(m, shape(r.path)) for m in (r.methods or ()) if m != "HEAD"}
        elif isinstance(r, WebSocketRoute):
            found.add(("GET", shape(r.path)))
    return found


def document(routes: Iterable[BaseRoute]) -> Schema:
    """The OpenAPI document for the operations among ``routes``."""
    here = served(routes)
    paths: dict[str, Schema] = {}
    for (method, path), operation in CATALOGUE.items():
        if (method, shape(path)) in here:
            paths.setdefault(path, {})[method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "agent-sessions",
            "version": VERSION,
            "description": "Hosts ACP coding agents for the web. The contract is API.md; "
            "this document "
            "describes its HTTP surface. Every error is {error: {code, message, details}}.",
        },
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": {**SCHEMAS, **STATS_SCHEMAS},
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "API_TOKEN, when it is set.",
                },
                "queryToken": {
                    "type": "apiKey",
                    "in": "query",
                    "name": "token",
                    "description": "API_TOKEN on the WebSocket URL (browsers).",
                },
            },
        },
    }


async def openapi_json(request: Request) -> Response:
    cached = getattr(request.app.state, "openapi_document", None)
    if cached is None:
        cached = request.app.state.openapi_document = document(request.app.router.routes)
    return JSONResponse(cached)


def route() -> Route:
    """``GET /openapi.json``."""
    return Route("/openapi.json", openapi_json, methods=["GET"], name="openapi")
