"""The builders of operations: parameters, bodies, responses, and ``op`` which adds the
error responses every operation of its kind can answer."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from server.web.openapi.schemas import UUID, Schema, nullable, ref

__all__ = [
    "CURSOR",
    "ERRORS",
    "PAGE",
    "RUN",
    "SESSION",
    "SESSION_VIEW",
    "body_schema",
    "error",
    "int_param",
    "json_response",
    "list_param",
    "op",
    "optional",
    "path_param",
    "query",
    "request_body",
]

ERRORS = {
    400: "Malformed JSON (invalid, NaN, not UTF-8, too deeply nested) or a wrong content "
    "type: invalid_json.",
    401: "A missing or wrong bearer token (when API_TOKEN is set): unauthorized.",
    403: "Outside the workspace root (path_outside_workspace) or a forbidden Origin "
    "(forbidden_origin).",
    404: "An unknown id (repo_not_found, session_not_found, …) or route (not_found).",
    409: "A state conflict (session_not_active, turn_in_progress, run_not_paused, …).",
    413: "The body (MAX_BODY_BYTES; a prompt's body has room for an image at "
    "MAX_IMAGE_BYTES besides its text), the prompt (MAX_PROMPT_BYTES) or an image "
    "(MAX_IMAGE_BYTES) is over its limit: payload_too_large.",
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


def error(status: int) -> Schema:
    response: Schema = {
        "description": ERRORS[status],
        "content": {"application/json": {"schema": ref("Error")}},
    }
    if status in ERROR_HEADERS:
        response["headers"] = ERROR_HEADERS[status]
    return response


def json_response(description: str, schema: Schema) -> Schema:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def path_param(name: str, description: str) -> Schema:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": UUID,
        "description": description,
    }


def query(name: str, schema: Schema, description: str = "") -> Schema:
    param: Schema = {"name": name, "in": "query", "required": False, "schema": schema}
    if description:
        param["description"] = description
    return param


def list_param(name: str, values: list[str], description: str) -> Schema:
    """A comma-separated list of enum values (``status=active,completed``)."""
    return {
        **query(name, {"type": "array", "items": {"enum": values}}, description),
        "style": "form",
        "explode": False,
    }


def int_param(name: str, minimum: int, maximum: int | None = None, description: str = "") -> Schema:
    schema: Schema = {"type": "integer", "minimum": minimum}
    if maximum is not None:
        schema["maximum"] = maximum
    return query(name, schema, description)


def request_body(
    schema: Schema, *, required: bool = True, media: str = "application/json"
) -> Schema:
    return {"required": required, "content": {media: {"schema": schema}}}


CURSOR = query("cursor", {"type": "string"}, "Opaque: the nextCursor of the previous page.")


def optional(schema: Schema) -> Schema:
    """A query value where an empty string means "not given" (``?repoId=``)."""
    return {"anyOf": [schema, {"const": ""}]}


SESSION = path_param("sessionId", "A session id.")
RUN = path_param("runId", "A run id.")


def op(
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
        # 401 without a valid credential; 403 a role it lacks (or a proxy's unknown user);
        # 429 after too many wrong ones from the address (API.md "Users and access").
        statuses |= {401, 403, 429}
    else:
        operation["security"] = []
    if tag != "stream":
        statuses |= {413}  # the body limit covers every route, whatever it reads
    if tag == "api":
        statuses |= {403}  # a browser's request from a forbidden Origin
    responses = {**responses, **{s: error(s) for s in sorted(statuses)}}
    operation["responses"] = {str(k): v for k, v in sorted(responses.items())}
    operation.update(extra)
    return operation


SESSION_VIEW = json_response("The session.", ref("Session"))
PAGE = {"nextCursor": nullable({"type": "string"})}


def body_schema(shape: type[msgspec.Struct]) -> Schema:
    """A request body's schema from its Struct in ``server.shapes`` (what the server
    accepts, without a title or the defaults the server applies)."""
    _, found = msgspec.json.schema_components([shape], ref_template="#/components/schemas/{name}")
    schema: Schema = found[shape.__name__]
    schema.pop("title", None)
    for prop in schema["properties"].values():
        prop.pop("default", None)
    return schema
