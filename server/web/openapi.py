"""The OpenAPI 3.1 document of the HTTP API (``GET /openapi.json``), written by hand from
API.md.

``CATALOGUE`` describes every operation API.md names (plus the ones the server adds:
/openapi.json, the UI files, session import). ``document(routes)`` publishes the
operations the app actually serves, so the document never promises an endpoint that is
not there; tests/security/test_openapi.py checks that every served route is described
(and nothing else), and runs schemathesis against a live server with every check.

Conventions: path parameters are camelCase (``{sessionId}``); HEAD (answered for every
GET) is implied, not listed; every operation under /api, /ws and /metrics needs the
bearer token when ``API_TOKEN`` is set (``security``), the others declare ``security: []``.
Request bodies describe exactly what the server accepts (a schema-valid body is never
refused with 400 or 422 for its shape); responses list every status the operation can
answer, each error with the one error body of API.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route, WebSocketRoute

from server.web.jsonresp import JSONResponse
from server.web.openapi_stats import register as register_stats

__all__ = ["CATALOGUE", "document", "openapi_json", "route"]

Schema = dict[str, Any]

VERSION = "0.1.0"
INT64_MAX = 2**63 - 1

# A string the server does not consider blank: Python's str.strip() also strips
# \x1c-\x1f and \x85, which JSON Schema's \s does not cover.
NONBLANK = {"type": "string", "pattern": "[^\\s\\x1c-\\x1f\\x85]"}
UUID: Schema = {"type": "string", "format": "uuid"}
TIME: Schema = {"type": "string", "format": "date-time"}
SESSION_STATUSES = ["active", "completed", "cancelled", "error"]
RUN_STATUSES = ["running", "completed", "failed", "cancelled", "paused", "interrupted"]
TOOL_STATUSES = ["pending", "in_progress", "completed", "error", "cancelled"]
ROLES = ["user", "agent", "system"]
MESSAGE_TYPES = [
    "text",
    "thought",
    "plan",
    "tool",
    "permission",
    "status",
    "run",
    "usage",
    "update",
]


def _ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def _null(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def _object(required: Iterable[str] = (), **properties: Schema) -> Schema:
    return {"type": "object", "properties": properties, "required": list(required)}


def _closed(required: Iterable[str] = (), **properties: Schema) -> Schema:
    return {**_object(required, **properties), "additionalProperties": False}


SCHEMAS: dict[str, Schema] = {
    "Error": _closed(
        ["error"],
        error=_closed(
            ["code", "message", "details"],
            code={"type": "string", "description": "A machine word, e.g. session_limit_reached."},
            message={"type": "string", "minLength": 1, "description": "A sentence for people."},
            details={
                "type": "object",
                "description": "Facts about the error; a 500 has requestId.",
            },
        ),
    ),
    "Repo": _closed(
        ["id", "name", "path", "isGitRepo", "createdAt"],
        id=UUID,
        name={"type": "string"},
        path={"type": "string"},
        isGitRepo={"type": "boolean"},
        createdAt=TIME,
    ),
    "Agent": _closed(
        ["id", "command", "default"],
        id={"type": "string"},
        command={"type": "string"},
        default={"type": "boolean"},
    ),
    "Session": _object(
        [
            "id",
            "repoId",
            "repo",
            "agentId",
            "status",
            "title",
            "createdAt",
            "updatedAt",
            "lastSeq",
            "activeRunId",
            "parentRunId",
            "forkedFrom",
            "metadata",
        ],
        id=UUID,
        repoId=UUID,
        repo=_ref("Repo"),
        agentId={"type": "string"},
        status={"enum": SESSION_STATUSES},
        title=_null({"type": "string"}),
        createdAt=TIME,
        updatedAt=TIME,
        lastSeq={"type": "integer", "minimum": 0},
        activeRunId=_null(UUID),
        parentRunId=_null(UUID),
        forkedFrom=_null(
            _closed(["sessionId", "seq"], sessionId=UUID, seq={"type": "integer", "minimum": 0})
        ),
        metadata={"type": "object"},
    ),
    "MessageContent": {
        **_object(["type"], type={"enum": MESSAGE_TYPES}),
        "description": "Typed content; its fields per type are listed in API.md, Messages.",
    },
    "Message": _object(
        ["id", "sessionId", "runId", "seq", "role", "content", "stepNumber", "timestamp"],
        id=UUID,
        sessionId=UUID,
        runId=_null(UUID),
        seq={"type": "integer", "minimum": 1},
        role={"enum": ROLES},
        content=_ref("MessageContent"),
        stepNumber=_null({"type": "integer"}),
        timestamp=TIME,
        raw={"description": "The raw ACP frame (only with raw=true and on single messages)."},
        dropped={
            "type": "boolean",
            "description": "Dropped by a rewind (only with the raw frame).",
        },
    ),
    "Cost": _null(
        _object(
            ["amount", "currency"], amount={"type": "number"}, currency=_null({"type": "string"})
        )
    ),
    "Run": _object(
        [
            "id",
            "sessionId",
            "repoId",
            "agentId",
            "status",
            "stopReason",
            "stepCount",
            "maxSteps",
            "parentRunId",
            "resumedFrom",
            "summary",
            "errorMessage",
            "usage",
            "cost",
            "durationMs",
            "createdAt",
            "completedAt",
        ],
        id=UUID,
        sessionId=UUID,
        repoId=UUID,
        agentId={"type": "string"},
        status={"enum": RUN_STATUSES},
        stopReason=_null({"type": "string"}),
        stepCount={"type": "integer", "minimum": 0},
        maxSteps={"type": "integer", "minimum": 0},
        parentRunId=_null(UUID),
        resumedFrom=_null(UUID),
        summary=_null({"type": "string"}),
        errorMessage=_null({"type": "string"}),
        usage=_null({"type": "object"}),
        cost=_ref("Cost"),
        durationMs=_null({"type": "integer"}),
        createdAt=TIME,
        completedAt=_null(TIME),
    ),
    "ToolCall": _object(
        [
            "id",
            "runId",
            "messageId",
            "toolCallId",
            "toolName",
            "kind",
            "input",
            "output",
            "status",
            "durationMs",
            "stepNumber",
            "createdAt",
            "completedAt",
        ],
        id=UUID,
        runId=UUID,
        messageId=_null(UUID),
        toolCallId={"type": "string"},
        toolName=_null({"type": "string"}),
        kind=_null({"type": "string"}),
        input={},
        output={},
        status={"enum": TOOL_STATUSES},
        durationMs=_null({"type": "integer"}),
        stepNumber=_null({"type": "integer"}),
        createdAt=TIME,
        completedAt=_null(TIME),
    ),
    "TranscriptEntry": _object(
        ["role", "content"],
        role={"enum": ["system", "user", "assistant", "tool"]},
        content={"type": "string"},
        toolCalls={
            "type": "array",
            "items": _object(
                ["id", "name", "arguments"],
                id={"type": "string"},
                name={"type": "string"},
                arguments={},
            ),
        },
        toolCallId={"type": "string"},
    ),
}

ERRORS = {
    400: "Malformed JSON (invalid, NaN, not UTF-8, too deeply nested) or a wrong content "
    "type: invalid_json.",
    401: "A missing or wrong bearer token (when API_TOKEN is set): unauthorized.",
    403: "Outside the workspace root (path_outside_workspace) or a forbidden Origin "
    "(forbidden_origin).",
    404: "An unknown id (repo_not_found, session_not_found, …) or route (not_found).",
    409: "A state conflict (session_not_active, turn_in_progress, run_not_paused, …).",
    413: "The body (MAX_BODY_BYTES) or the prompt (MAX_PROMPT_BYTES) is over its limit: "
    "payload_too_large.",
    422: "Well-formed but invalid: a bad UUID, an empty text, an unknown filter value, a "
    "bad cursor, "
    "a seq out of range: validation_error.",
    429: "Too many active sessions (MAX_CONCURRENT_SESSIONS): session_limit_reached.",
    502: "The agent could not start (exited, failed initialize or session/new, timed out): "
    "agent_start_failed.",
    503: "Not ready (the database does not answer), shutting down, or (scale-out) the node "
    "running the "
    "session does not answer: owner_unavailable.",
}
ERROR_HEADERS = {
    401: {"WWW-Authenticate": {"schema": {"type": "string", "const": "Bearer"}, "required": True}},
    429: {"Retry-After": {"schema": {"type": "string"}, "required": True}},
}


def _error(status: int) -> Schema:
    response: Schema = {
        "description": ERRORS[status],
        "content": {"application/json": {"schema": _ref("Error")}},
    }
    if status in ERROR_HEADERS:
        response["headers"] = ERROR_HEADERS[status]
    return response


def _json(description: str, schema: Schema) -> Schema:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _path(name: str, description: str) -> Schema:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": UUID,
        "description": description,
    }


def _query(name: str, schema: Schema, description: str = "") -> Schema:
    param: Schema = {"name": name, "in": "query", "required": False, "schema": schema}
    if description:
        param["description"] = description
    return param


def _list(name: str, values: list[str], description: str) -> Schema:
    """A comma-separated list of enum values (``status=active,completed``)."""
    return {
        **_query(name, {"type": "array", "items": {"enum": values}}, description),
        "style": "form",
        "explode": False,
    }


def _int(name: str, minimum: int, maximum: int | None = None, description: str = "") -> Schema:
    schema: Schema = {"type": "integer", "minimum": minimum}
    if maximum is not None:
        schema["maximum"] = maximum
    return _query(name, schema, description)


def _body(schema: Schema, *, required: bool = True, media: str = "application/json") -> Schema:
    return {"required": required, "content": {media: {"schema": schema}}}


CURSOR = _query("cursor", {"type": "string"}, "Opaque: the nextCursor of the previous page.")


def _optional(schema: Schema) -> Schema:
    """A query value where an empty string means "not given" (``?repoId=``)."""
    return {"anyOf": [schema, {"const": ""}]}


SESSION = _path("sessionId", "A session id.")
RUN = _path("runId", "A run id.")


def _op(
    summary: str,
    responses: dict[int, Schema],
    *,
    params: Iterable[Schema] = (),
    body: Schema | None = None,
    errors: Iterable[int] = (),
    token: bool = True,
    tag: str = "api",
    **extra: Any,
) -> Schema:
    operation: Schema = {"summary": summary, "tags": [tag], "responses": {}}
    params = list(params)
    if params:
        operation["parameters"] = params
    if body is not None:
        operation["requestBody"] = body
    statuses = set(errors)
    if tag == "stream":  # refusals are close codes after the handshake, never HTTP statuses
        operation["responses"] = {str(k): v for k, v in responses.items()}
        operation.update(extra)
        return operation
    if any(p["in"] == "path" for p in params):
        statuses |= {404, 422}  # an unknown id; a malformed one
    if body is not None:
        statuses |= {413}
        if "application/json" in body["content"]:
            statuses |= {400, 422}
    if token:
        statuses |= {401}
    else:
        operation["security"] = []
    if tag != "stream":
        statuses |= {413}  # the body limit covers every route, whatever it reads
    if tag == "api":
        statuses |= {403}  # a browser's request from a forbidden Origin
    responses = {**responses, **{s: _error(s) for s in sorted(statuses)}}
    operation["responses"] = {str(k): v for k, v in sorted(responses.items())}
    operation.update(extra)
    return operation


_SESSION_VIEW = _json("The session.", _ref("Session"))
_PAGE = {"nextCursor": _null({"type": "string"})}

CATALOGUE: dict[tuple[str, str], Schema] = {
    # -- operations --------------------------------------------------------------------
    ("GET", "/healthz"): _op(
        "Liveness",
        {200: _json("Alive.", _closed(["status"], status={"const": "ok"}))},
        token=False,
        tag="operations",
    ),
    ("GET", "/readyz"): _op(
        "Readiness: the database answers",
        {200: _json("Ready.", _closed(["status"], status={"const": "ready"}))},
        errors=[503],
        token=False,
        tag="operations",
    ),
    ("GET", "/metrics"): _op(
        "Prometheus metrics",
        {
            200: {
                "description": "Prometheus text exposition format.",
                "content": {"text/plain": {"schema": {"type": "string"}}},
            }
        },
        tag="operations",
    ),
    ("GET", "/openapi.json"): _op(
        "This document",
        {200: _json("OpenAPI 3.1.", {"type": "object"})},
        token=False,
        tag="operations",
    ),
    ("GET", "/"): _op(
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
    ("GET", "/{name}"): _op(
        "A file of the web UI",
        {200: {"description": "The file.", "content": {"*/*": {"schema": {}}}}, 404: _error(404)},
        params=[{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
        token=False,
        tag="ui",
    ),
    ("GET", "/api/agents"): _op(
        "The configured agents",
        {
            200: _json(
                "AGENT_COMMAND (id default) and AGENTS_FILE's agents.",
                _closed(["agents"], agents={"type": "array", "items": _ref("Agent")}),
            )
        },
    ),
    # -- repositories ------------------------------------------------------------------
    ("GET", "/api/repos"): _op(
        "List repositories",
        {
            200: _json(
                "Every registered repository.",
                _closed(["repos"], repos={"type": "array", "items": _ref("Repo")}),
            )
        },
    ),
    ("POST", "/api/repos"): _op(
        "Register a repository",
        {201: _json("Registered.", _ref("Repo"))},
        body=_body(
            _object(
                ["path"],
                path={**NONBLANK, "description": "Relative to the workspace root, or absolute."},
                name=_null(NONBLANK),
            )
        ),
        errors=[403, 409],
        description="The path is resolved (symlinks too) and must be a directory inside "
        "AGENT_WORKSPACE_ROOT: 403 outside, 422 missing or not a directory, 409 already "
        "registered.",
    ),
    ("GET", "/api/repos/{repoId}"): _op(
        "A repository",
        {200: _json("The repository.", _ref("Repo"))},
        params=[_path("repoId", "A repository id.")],
    ),
    ("DELETE", "/api/repos/{repoId}"): _op(
        "Unregister a repository (and its finished sessions)",
        {204: {"description": "Unregistered."}},
        params=[_path("repoId", "A repository id.")],
        errors=[409],
    ),
    # -- sessions ----------------------------------------------------------------------
    ("GET", "/api/sessions"): _op(
        "List sessions, newest first",
        {
            200: _json(
                "A page.",
                _object(
                    ["sessions", "total", "limit", "offset", "nextCursor"],
                    sessions={"type": "array", "items": _ref("Session")},
                    total={"type": "integer", "minimum": 0},
                    limit={"type": "integer"},
                    offset={"type": "integer"},
                    **_PAGE,
                ),
            )
        },
        params=[
            _query("repoId", _optional(UUID)),
            _list("status", SESSION_STATUSES, "Any of these statuses."),
            _query("agentId", {"type": "string"}),
            _int("limit", 1, 200),
            _int("offset", 0, INT64_MAX),
            CURSOR,
        ],
        errors=[422],
    ),
    ("POST", "/api/sessions"): _op(
        "Create a session (starts its agent)",
        {201: _json("Active: the agent answered initialize and session/new.", _ref("Session"))},
        body=_body(
            _object(
                ["repoId"],
                repoId=UUID,
                agentId=_null(NONBLANK),
                title=_null({"type": "string"}),
                parentRunId=_null(UUID),
            )
        ),
        errors=[403, 404, 429, 502, 503],
    ),
    ("GET", "/api/sessions/{sessionId}"): _op(
        "A session with its finished messages",
        {
            200: _json(
                "The session.",
                {
                    "allOf": [
                        _ref("Session"),
                        _object(["messages"], messages={"type": "array", "items": _ref("Message")}),
                    ]
                },
            )
        },
        params=[SESSION],
    ),
    ("DELETE", "/api/sessions/{sessionId}"): _op(
        "Cancel a session: stop its turn and agent",
        {200: _SESSION_VIEW},
        params=[SESSION],
        errors=[409, 503],
    ),
    ("POST", "/api/sessions/{sessionId}/prompt"): _op(
        "Start a turn",
        {
            202: _json(
                "Accepted; the user message is stored.",
                _closed(["runId", "sessionId"], runId=UUID, sessionId=UUID),
            )
        },
        params=[SESSION],
        body=_body(_object(["text"], text=NONBLANK)),
        errors=[409, 502, 503],
    ),
    ("POST", "/api/sessions/{sessionId}/cancel"): _op(
        "Cancel the running turn",
        {202: _json("Cancelling.", _closed(["sessionId"], sessionId=UUID))},
        params=[SESSION],
        errors=[409, 503],
    ),
    ("POST", "/api/sessions/{sessionId}/complete"): _op(
        "Complete a session", {200: _SESSION_VIEW}, params=[SESSION], errors=[409, 503]
    ),
    ("GET", "/api/sessions/{sessionId}/messages"): _op(
        "Messages after a seq",
        {
            200: _json(
                "In seq order.",
                _closed(
                    ["messages", "nextAfter"],
                    messages={"type": "array", "items": _ref("Message")},
                    nextAfter=_null({"type": "integer"}),
                ),
            )
        },
        params=[
            SESSION,
            _int("after", 0, INT64_MAX),
            _query("since", _optional(TIME)),
            _int("limit", 1, 5000),
            _query("role", _optional({"enum": ROLES}), "One value; a list is refused (422)."),
            _query("type", _optional({"enum": MESSAGE_TYPES}), "One value; a list is refused."),
            _query("partial", {"type": "boolean"}),
            _query("raw", {"type": "boolean"}),
        ],
    ),
    ("POST", "/api/sessions/{sessionId}/permissions/{requestId}"): _op(
        "Answer a permission request (the first answer wins)",
        {
            200: _json(
                "Decided.",
                _closed(
                    ["requestId", "outcome"],
                    requestId=UUID,
                    outcome=_closed(
                        ["outcome", "optionId"],
                        outcome={"const": "selected"},
                        optionId={"type": "string"},
                    ),
                ),
            )
        },
        params=[SESSION, _path("requestId", "The requestId of a permission message.")],
        body=_body(_object(["optionId"], optionId=NONBLANK)),
        errors=[409, 503],
    ),
    # -- history -----------------------------------------------------------------------
    ("GET", "/api/sessions/{sessionId}/transcript"): _op(
        "The conversation in an LLM chat API's shape",
        {
            200: _json(
                "The transcript.",
                _closed(["messages"], messages={"type": "array", "items": _ref("TranscriptEntry")}),
            )
        },
        params=[SESSION, _int("uptoSeq", 0, INT64_MAX)],
    ),
    ("POST", "/api/sessions/{sessionId}/fork"): _op(
        "Copy a session up to a seq",
        {201: _json("The new session.", _ref("Session"))},
        params=[SESSION],
        body=_body(
            _object(
                [],
                uptoSeq=_null({"type": "integer", "minimum": 0, "maximum": INT64_MAX}),
                title=_null({"type": "string"}),
            ),
            required=False,
        ),
        errors=[409, 429, 502, 503],
    ),
    ("POST", "/api/sessions/{sessionId}/rewind"): _op(
        "Drop the messages after a seq",
        {200: _SESSION_VIEW},
        params=[SESSION],
        body=_body(
            _object(["toSeq"], toSeq={"type": "integer", "minimum": 0, "maximum": INT64_MAX})
        ),
        errors=[409, 503],
    ),
    ("GET", "/api/sessions/{sessionId}/export"): _op(
        "Every stored message as NDJSON",
        {
            200: {
                "description": "One JSON object per line.",
                "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
            }
        },
        params=[SESSION],
    ),
    ("POST", "/api/sessions/import"): _op(
        "Import an exported session",
        {201: _json("The imported session (completed).", _ref("Session"))},
        params=[_query("repoId", _optional(UUID)), _query("agentId", {"type": "string"})],
        body=_body(
            {"type": "string", "description": "An export: one JSON object per line."},
            media="application/x-ndjson",
        ),
        errors=[400, 404, 422, 429],
    ),
    # -- runs --------------------------------------------------------------------------
    ("GET", "/api/agent-runs"): _op(
        "List runs, newest first",
        {
            200: _json(
                "A page.",
                _closed(
                    ["data", "nextCursor"], data={"type": "array", "items": _ref("Run")}, **_PAGE
                ),
            )
        },
        params=[
            _query("repoId", _optional(UUID)),
            _query("sessionId", _optional(UUID)),
            _list("status", RUN_STATUSES, "Any of these."),
            _query("agentId", {"type": "string"}),
            _query("parentRunId", _optional(UUID)),
            _int("limit", 1, 200),
            CURSOR,
        ],
        errors=[422],
    ),
    ("GET", "/api/agent-runs/{runId}"): _op(
        "A run", {200: _json("The run.", _ref("Run"))}, params=[RUN]
    ),
    ("GET", "/api/agent-runs/{runId}/messages"): _op(
        "A run's messages",
        {
            200: _json(
                "In seq order.",
                _closed(
                    ["data", "nextCursor"],
                    data={"type": "array", "items": _ref("Message")},
                    **_PAGE,
                ),
            )
        },
        params=[RUN, _int("limit", 1, 1000), CURSOR, _query("partial", {"type": "boolean"})],
    ),
    ("GET", "/api/agent-runs/{runId}/messages/{messageId}"): _op(
        "One message of a run, with its raw frame",
        {200: _json("The message.", _ref("Message"))},
        params=[RUN, _path("messageId", "A message id.")],
    ),
    ("GET", "/api/agent-runs/{runId}/tool-calls"): _op(
        "A run's tool calls",
        {
            200: _json(
                "In step order.",
                _closed(
                    ["data", "nextCursor"],
                    data={"type": "array", "items": _ref("ToolCall")},
                    **_PAGE,
                ),
            )
        },
        params=[
            RUN,
            _query("toolName", {"type": "string"}),
            _list("status", TOOL_STATUSES, "Any of these."),
            _int("limit", 1, 500),
            CURSOR,
        ],
    ),
    ("GET", "/api/agent-runs/{runId}/tool-calls/{callId}"): _op(
        "One tool call",
        {200: _json("The tool call.", _ref("ToolCall"))},
        params=[RUN, _path("callId", "A tool call id.")],
    ),
    ("POST", "/api/agent-runs/{runId}/resume"): _op(
        "Resume a paused or interrupted run",
        {202: _json("The new run.", _ref("Run"))},
        params=[RUN],
        body=_body(
            _object(
                [],
                maxSteps={
                    "type": "integer",
                    "minimum": 1,
                    "description": "Capped by MAX_TOTAL_STEPS_PER_RUN.",
                },
                text=_null(NONBLANK),
            ),
            required=False,
        ),
        errors=[409, 502, 503],
    ),
    # -- the stream --------------------------------------------------------------------
    ("GET", "/ws/sessions/{sessionId}"): _op(
        "The session's WebSocket stream",
        {
            101: {
                "description": "Switching to the WebSocket protocol. Refusals close after "
                "the handshake: 4401 "
                "unauthorized, 4403 forbidden origin, 4404 unknown session; later 4008 (too "
                "far behind), 1009 (a "
                "frame over MAX_WS_MESSAGE_BYTES), 1001 (shutting down). Frames: API.md, "
                "WebSocket stream."
            }
        },
        params=[
            {"name": "sessionId", "in": "path", "required": True, "schema": UUID},
            _int("after", 0, INT64_MAX, "Replay the messages after this seq (default 0)."),
            _query("token", {"type": "string"}, "The token, for browsers (instead of the header)."),
        ],
        tag="stream",
        security=[{"bearer": []}, {"queryToken": []}],
    )
    | {"x-websocket": True},
}

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


def document(routes: Iterable[BaseRoute]) -> dict[str, Any]:
    """The OpenAPI document for the operations among ``routes``."""
    here = served(routes)
    paths: dict[str, dict[str, Any]] = {}
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
            "schemas": SCHEMAS,
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


register_stats(CATALOGUE, SCHEMAS)
