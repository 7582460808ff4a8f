"""The document itself: the operations the app serves, with the component schemas, and
the route that serves it."""

from __future__ import annotations

import re
from collections.abc import Iterable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route, WebSocketRoute

from server.web.access import OPERATIONS, Rule
from server.web.jsonresp import JSONResponse
from server.web.openapi.paths_basic import BASIC
from server.web.openapi.paths_client_tools import client_tool_paths
from server.web.openapi.paths_controls import control_paths
from server.web.openapi.paths_glance import glance_paths
from server.web.openapi.paths_mcp import mcp_paths
from server.web.openapi.paths_review import review_paths
from server.web.openapi.paths_runs import RUNS
from server.web.openapi.paths_sessions import SESSIONS
from server.web.openapi.paths_stats import STATS, STATS_SCHEMAS
from server.web.openapi.paths_users import USER_SCHEMAS, USERS
from server.web.openapi.paths_workspaces import workspace_paths
from server.web.openapi.schemas import SCHEMAS, VERSION, Schema

__all__ = ["CATALOGUE", "document", "openapi_json", "route"]

CATALOGUE: dict[tuple[str, str], Schema] = {**BASIC, **SESSIONS, **RUNS, **STATS, **USERS}
CATALOGUE.update(workspace_paths(CATALOGUE, SCHEMAS))  # API.md "Worktrees and changes"
CATALOGUE.update(control_paths(CATALOGUE, SCHEMAS))  # API.md "Agent controls"
CATALOGUE.update(mcp_paths(CATALOGUE, SCHEMAS))  # API.md "Agent controls", MCP servers
CATALOGUE.update(client_tool_paths(CATALOGUE, SCHEMAS))  # API.md "Client tools"
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
    rules = {(m, shape(p)): rule for (m, p), rule in access_rules().items()}
    for (method, path), operation in CATALOGUE.items():
        if (method, shape(path)) in here:
            rule = rules.get((method, shape(path)))
            paths.setdefault(path, {})[method.lower()] = with_access(operation, rule, path)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "agent-sessions",
            "version": VERSION,
            "description": "Hosts ACP coding agents for the web. The contract is API.md; "
            "this document "
            "describes its HTTP surface. Every error is {error: {code, message, details}}.",
        },
        "security": SIGNED_IN,
        "paths": paths,
        "components": {
            "schemas": {**SCHEMAS, **STATS_SCHEMAS, **USER_SCHEMAS},
            "securitySchemes": SECURITY_SCHEMES,
        },
    }


# API.md "Users and access": how a request says who it is.
SECURITY_SCHEMES: Schema = {
    "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "A user's token (as_...), or API_TOKEN (an admin).",
    },
    "queryToken": {
        "type": "apiKey",
        "in": "query",
        "name": "token",
        "description": "The same token on a WebSocket URL (browsers cannot set headers there).",
    },
    "cookie": {
        "type": "apiKey",
        "in": "cookie",
        "name": "agent_sessions_login",
        "description": "A browser's sign-in (POST /api/login).",
    },
    "proxy": {
        "type": "apiKey",
        "in": "header",
        "name": "X-Auth-Proxy-Secret",
        "description": "A signing-in proxy: AUTH_PROXY_HEADER names the user, believed only "
        "with this header equal to AUTH_PROXY_SECRET.",
    },
    "agentSecret": {
        "type": "http",
        "scheme": "bearer",
        "description": "The secret made for one agent process (client tools' MCP server); "
        "no person's token opens it.",
    },
}
SIGNED_IN: list[Schema] = [{"bearer": []}, {"cookie": []}, {"proxy": []}]


def access_rules() -> dict[tuple[str, str], Rule]:
    """The access table by (method, path), WebSocket handshakes as GET."""
    found = {}
    for key, rule in OPERATIONS.items():
        method, path = key.split(" ", 1)
        found[(method, path)] = rule
    return found


def with_access(operation: Schema, rule: Rule | None, path: str) -> Schema:
    """The operation with its role (``x-role``, ``x-scope``, said in the description too)
    and its security: none for open operations."""
    if rule is None:
        return operation
    described = dict(operation)
    described["x-role"] = None if rule.scope == "open" else rule.role
    described["x-access"] = rule.describe()
    if rule.drive:
        described["x-owner-only"] = True
    note = f"Who: {rule.describe()}."
    described["description"] = (
        f"{operation['description']}\n\n{note}" if operation.get("description") else note
    )
    if path.startswith("/mcp/"):
        described["security"] = [{"agentSecret": []}]
    elif rule.scope == "open":
        described["security"] = []
    elif operation.get("tags") == ["stream"]:
        described["security"] = [{"queryToken": []}, *SIGNED_IN]
    return described


async def openapi_json(request: Request) -> Response:
    cached = getattr(request.app.state, "openapi_document", None)
    if cached is None:
        cached = request.app.state.openapi_document = document(request.app.router.routes)
    return JSONResponse(cached)


def route() -> Route:
    """``GET /openapi.json``."""
    return Route("/openapi.json", openapi_json, methods=["GET"], name="openapi")
