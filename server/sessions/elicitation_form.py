"""Elicitation content checks: the agent's ``requestedSchema`` must be a JSON Schema, and
a person's ``accept`` content must match it (jsonschema, draft 2020-12) and hold only the
values ACP lets content carry (string, number, integer, boolean, list of strings)."""

from __future__ import annotations

from typing import Any

import jsonschema
from referencing.exceptions import Unresolvable

from agent_bridge.jsontypes import JsonObject
from server.sessions.errors import Invalid

__all__ = ["check_content", "schema_problem"]

_VALIDATOR = jsonschema.Draft202012Validator


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` cannot be a requested schema (None when it can)."""
    if not isinstance(schema, dict):
        return "requestedSchema must be an object"
    try:
        _VALIDATOR.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return f"requestedSchema is not a valid JSON Schema: {exc.message}"
    return None


def _allowed(value: Any) -> bool:
    if isinstance(value, str | bool | int | float):
        return True
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def check_content(schema: JsonObject, content: Any) -> JsonObject:
    """``content`` when it matches ``schema``; else Invalid (422) saying where and why."""
    if not isinstance(content, dict):
        raise Invalid("content must be an object matching requestedSchema.", field="content")
    for key, value in content.items():
        if not _allowed(value):
            raise Invalid(
                f"content.{key}: a value must be a string, number, boolean or list of strings.",
                field=f"content.{key}",
            )
    validator = _VALIDATOR(schema, format_checker=_VALIDATOR.FORMAT_CHECKER)
    try:
        error = jsonschema.exceptions.best_match(validator.iter_errors(content))
    except Unresolvable:  # a $ref to elsewhere: nothing is fetched
        raise Invalid(
            "The requested schema refers to a schema that cannot be resolved.", field="content"
        ) from None
    if error is not None:
        where = "content" + "".join(f".{p}" if isinstance(p, str) else f"[{p}]" for p in error.path)
        raise Invalid(
            f"{where} does not match the requested schema: {error.message}",
            field=where,
            schemaPath="/".join(str(p) for p in error.schema_path),
        )
    return content
