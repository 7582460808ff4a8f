"""Request bodies (REST and WebSocket commands) → the Structs of ``server.shapes``, the
same Structs the OpenAPI request components are generated from.

``decode`` reads a body field by field, in the Struct's declaration order, so the first
bad field is the one reported, with the sentences clients have always had:

- a missing (or null) required field: ``<name> is required.``;
- a string field: ``<name> must be a string.``, ``<name> must not be empty.`` (a NonBlank,
  a UUID or a choice of words), ``<name> must be a UUID.``;
- anything else that does not fit its type: the field's own sentence
  (``msgspec.Meta(extra={"invalid": …})``), e.g. ``maxSteps must be a positive integer.``

An integer field takes a whole float (``5.0``) as the integer it is: the OpenAPI document
says ``integer``, and JSON Schema's integer includes it.

A route passes ``checks`` (by wire name) for a field whose rule says more than its type
(a size limit, a nested shape with its own sentences): that check reads the raw value,
raises, and returns the value to keep. Every failure is a 422 ``validation_error`` with
``details.field``. The Struct is then built from the checked values (no second pass)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from functools import cache
from typing import TypeVar

import msgspec
from msgspec import inspect
from starlette.requests import Request

from agent_bridge.jsontypes import JsonObject, JsonValue
from server.web.errors import ApiError
from server.web.requests import read_json

__all__ = ["Check", "decode", "read_struct"]

B = TypeVar("B", bound=msgspec.Struct)
Check = Callable[[JsonValue], JsonValue]
"""A route's rule for one field: the raw value (None when absent) → the value to keep."""

_MISSING = object()
_INT64 = 2**63  # a whole float past int64 stays a float: refused, never a huge int


def _is_int(kind: inspect.Type) -> bool:
    """An int, possibly with its Meta, or a union with one (``int | UNSET``)."""
    if isinstance(kind, inspect.Metadata):
        kind = kind.type
    if isinstance(kind, inspect.UnionType):
        return any(_is_int(t) for t in kind.types)
    return isinstance(kind, inspect.IntType)


class _Rule(msgspec.Struct, frozen=True):
    name: str  # the Python attribute
    wire: str  # the camelCase name clients send
    annotation: object  # for msgspec.convert
    required: bool
    nullable: bool
    text: bool  # a string (or a choice of strings): the string sentences apply
    nonempty: bool
    is_uuid: bool
    words: tuple[str, ...] | None  # a Literal of strings
    invalid: str
    integer: bool = False  # an int (JSON Schema's integer: 3.0 is one)

    def fail(self, message: str) -> ApiError:
        return ApiError.validation(message, field=self.wire)

    def value(self, raw: object) -> object:
        """The checked value of a present, non-null field."""
        if self.text:
            if not isinstance(raw, str):
                raise self.fail(f"{self.wire} must be a string.")
            if self.nonempty and not raw.strip():
                raise self.fail(f"{self.wire} must not be empty.")
            if self.is_uuid:
                try:
                    return str(uuid.UUID(raw))
                except ValueError:
                    raise self.fail(f"{self.wire} must be a UUID.") from None
            if self.words is not None and raw not in self.words:
                raise self.fail(self.invalid)
            return raw
        if self.integer and isinstance(raw, float) and raw.is_integer() and abs(raw) < _INT64:
            raw = int(raw)  # a whole float is an integer to JSON Schema, not to msgspec
        try:
            return msgspec.convert(raw, self.annotation)
        except msgspec.ValidationError:
            raise self.fail(self.invalid) from None


def _unwrap(kind: inspect.Type) -> tuple[inspect.Type, bool, dict[str, object]]:
    """The field's type without None (and whether None is allowed) and its Meta extras."""
    nullable = False
    if isinstance(kind, inspect.UnionType):
        others = [t for t in kind.types if not isinstance(t, inspect.NoneType)]
        nullable = len(others) < len(kind.types)
        kind = others[0] if len(others) == 1 else inspect.UnionType(tuple(others))
    extra: dict[str, object] = {}
    if isinstance(kind, inspect.Metadata):
        extra = {**(kind.extra_json_schema or {}), **(kind.extra or {})}
        kind = kind.type
    return kind, nullable, extra


@cache
def _rules(cls: type[msgspec.Struct]) -> tuple[_Rule, ...]:
    info = inspect.type_info(cls)
    assert isinstance(info, inspect.StructType)
    annotations = {f.name: f.type for f in msgspec.structs.fields(cls)}
    rules = []
    for field in info.fields:
        kind, nullable, extra = _unwrap(field.type)
        words = None
        if isinstance(kind, inspect.LiteralType) and all(isinstance(v, str) for v in kind.values):
            words = tuple(str(v) for v in kind.values)
        is_uuid = extra.get("format") == "uuid"
        text = isinstance(kind, inspect.StrType) or words is not None
        pattern = kind.pattern if isinstance(kind, inspect.StrType) else None
        rules.append(
            _Rule(
                name=field.name,
                wire=field.encode_name,
                annotation=annotations[field.name],
                required=field.required,
                nullable=nullable,
                text=text,
                nonempty=pattern is not None or is_uuid or words is not None,
                is_uuid=is_uuid,
                words=words,
                invalid=str(extra.get("invalid") or f"{field.encode_name} is not valid."),
                integer=_is_int(kind),
            )
        )
    return tuple(rules)


def decode(body: JsonObject, cls: type[B], checks: Mapping[str, Check] | None = None) -> B:
    """``body`` (a JSON object) as a ``cls``; 422 at the first field that does not fit."""
    values: dict[str, object] = {}
    for rule in _rules(cls):
        raw = body.get(rule.wire, _MISSING)
        check = (checks or {}).get(rule.wire)
        if check is not None:
            kept = check(None if raw is _MISSING else raw)
            if kept is not None:
                values[rule.name] = kept
        elif raw is _MISSING or raw is None:
            if rule.required or (raw is None and not rule.nullable and not rule.text):
                if rule.text or raw is _MISSING:
                    raise rule.fail(f"{rule.wire} is required.")
                raise rule.fail(rule.invalid)
        else:
            values[rule.name] = rule.value(raw)
    return cls(**values)


async def read_struct(
    request: Request,
    cls: type[B],
    max_bytes: int,
    *,
    allow_empty: bool = False,
    checks: Mapping[str, Check] | None = None,
) -> B:
    """The request's JSON body (``read_json``: 400, 413, 422 for a non-object) as a
    ``cls``."""
    return decode(await read_json(request, max_bytes, allow_empty=allow_empty), cls, checks)
