"""Operations: health, metrics, the document, the UI files, agents and repositories."""

from __future__ import annotations

from server import shapes
from server.web.openapi.parts import body_schema, error, json_response, op, path_param, request_body
from server.web.openapi.schemas import Schema, closed, ref

__all__ = ["BASIC"]

BASIC: dict[tuple[str, str], Schema] = {
    # -- operations --------------------------------------------------------------------
    ("GET", "/healthz"): op(
        "Liveness",
        {200: json_response("Alive.", closed(["status"], status={"const": "ok"}))},
        token=False,
        tag="operations",
    ),
    ("GET", "/readyz"): op(
        "Readiness: the database answers; the agent sandbox in force",
        {
            200: json_response(
                "Ready.",
                closed(
                    ["status", "sandbox"],
                    status={"const": "ok"},
                    sandbox=closed(
                        ["enabled", "reason"],
                        enabled={"type": "boolean"},
                        reason={"anyOf": [{"type": "string"}, {"type": "null"}]},
                    ),
                ),
            )
        },
        errors=[503],
        token=False,
        tag="operations",
    ),
    ("GET", "/metrics"): op(
        "Prometheus metrics",
        {
            200: {
                "description": "Prometheus text exposition format.",
                "content": {"text/plain": {"schema": {"type": "string"}}},
            }
        },
        tag="operations",
    ),
    ("GET", "/openapi.json"): op(
        "This document",
        {200: json_response("OpenAPI 3.1.", {"type": "object"})},
        token=False,
        tag="operations",
    ),
    ("GET", "/"): op(
        "The web UI",
        {
            200: {
                "description": "index.html",
                "content": {"text/html": {"schema": {"type": "string"}}},
            }
        },
        token=False,
        tag="ui",
    ),
    ("GET", "/{name}"): op(
        "A file of the web UI",
        {200: {"description": "The file.", "content": {"*/*": {"schema": {}}}}, 404: error(404)},
        params=[{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
        token=False,
        tag="ui",
    ),
    ("GET", "/api/agents"): op(
        "The configured agents",
        {
            200: json_response(
                "AGENT_COMMAND (id default) and AGENTS_FILE's agents.",
                closed(["agents"], agents={"type": "array", "items": ref("Agent")}),
            )
        },
    ),
    # -- repositories ------------------------------------------------------------------
    ("GET", "/api/repos"): op(
        "List repositories",
        {
            200: json_response(
                "Every registered repository.",
                closed(["repos"], repos={"type": "array", "items": ref("Repo")}),
            )
        },
    ),
    ("POST", "/api/repos"): op(
        "Register a repository",
        {201: json_response("Registered.", ref("Repo"))},
        body=request_body(body_schema(shapes.RegisterRepo)),
        errors=[403, 409],
        description="The path is resolved (symlinks too) and must be a directory inside "
        "AGENT_WORKSPACE_ROOT: 403 outside, 422 missing or not a directory, 409 already "
        "registered.",
    ),
    ("GET", "/api/repos/{repoId}"): op(
        "A repository",
        {200: json_response("The repository.", ref("Repo"))},
        params=[path_param("repoId", "A repository id.")],
    ),
    ("DELETE", "/api/repos/{repoId}"): op(
        "Unregister a repository (and its finished sessions)",
        {204: {"description": "Unregistered."}},
        params=[path_param("repoId", "A repository id.")],
        errors=[409],
    ),
}
