"""Elicitation content checks: the agent's ``requestedSchema`` must be a JSON Schema, and
a person's ``accept`` content must match it (jsonschema, draft 2020-12) and hold only the
values ACP lets content carry (string, number, integer, boolean, list of strings).

jsonschema is imported on the first elicitation, not at start-up (~0.1 s of import)."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from agent_bridge.jsontypes import JsonObject
from server.sessions.errors import Invalid

if TYPE_CHECKING:
    import jsonschema

__all__ = ["check_content", "schema_problem"]


@cache
def _validator() -> type[jsonschema.Draft202012Validator]:
    import jsonschema

    return jsonschema.Draft202012Validator


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` cannot be a requested schema (None when it can)."""
    if not isinstance(schema, dict):
        return "requestedSchema must be an object"
    import jsonschema

    try:
        _validator().check_schema(schema)
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
    import jsonschema
    from referencing.exceptions import Unresolvable

    validator_class = _validator()
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
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
