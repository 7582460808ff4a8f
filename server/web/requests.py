"""Reading and validating what clients send: JSON bodies with a size limit, ids,
query parameters and cursors. Every failure is an ``ApiError`` (400, 413 or 422)."""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import orjson
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agent_bridge.jsontypes import JsonObject, JsonValue
from server.web.errors import ApiError

__all__ = [
    "check_uuid",
    "decode_cursor",
    "encode_cursor",
    "query_bool",
    "query_choice",
    "query_int",
    "query_list",
    "query_time",
    "read_body",
    "read_json",
    "session_id_param",
    "resource",
    "uuid_param",
]

MAX_JSON_DEPTH = 64

Endpoint = Callable[[Request], Awaitable[Response]]


def resource(path: str, **endpoints: Endpoint) -> Route:
    """One route for every method a path supports (``GET=list_things, POST=add_thing``),
    so that a 405 names all of them in ``Allow``; one Route per method would list only
    the first one's."""

    async def dispatch(request: Request) -> Response:
        method = "GET" if request.method == "HEAD" else request.method
        return await endpoints[method](request)

    name = "_".join(e.__name__ for e in endpoints.values())
    return Route(path, dispatch, methods=list(endpoints), name=name)


def session_id_param(request: Request) -> str:
    """The ``{session_id}`` of a path; ``/api/sessions/import`` is the POST-only import
    resource that this pattern also matches, so any other method there is a 405."""
    if request.path_params["session_id"] == "import":
        raise HTTPException(405, headers={"Allow": "POST"})
    return uuid_param(request, "session_id")


def _depth_ok(value: JsonValue, limit: int) -> bool:
    stack: list[tuple[JsonValue, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return True


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The raw body; 413 past ``max_bytes``, whether or not a length was declared."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise ApiError.too_large("request body", max_bytes)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise ApiError.too_large("request body", max_bytes)
    return bytes(body)


async def read_json(request: Request, max_bytes: int, *, allow_empty: bool = False) -> JsonObject:
    """The body as a JSON object; 413 past ``max_bytes`` (declared or not), 400 for a
    wrong content type or malformed JSON, 422 for a non-object."""
    body = await read_body(request, max_bytes)
    if not body and allow_empty:
        return {}
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/json" and not content_type.endswith("+json"):
        raise ApiError(400, "invalid_json", "Send the body as application/json.")
    try:
        value = orjson.loads(bytes(body))
    except orjson.JSONDecodeError:
        raise ApiError(400, "invalid_json", "The body is not valid JSON (UTF-8, no NaN).") from None
    if not isinstance(value, dict):
        raise ApiError.validation("The body must be a JSON object.")
    if not _depth_ok(value, MAX_JSON_DEPTH):
        raise ApiError(
            400, "invalid_json", f"The body is nested deeper than {MAX_JSON_DEPTH} levels."
        )
    return value


def uuid_param(request: Request, name: str) -> str:
    raw = request.path_params[name]
    try:
        return str(uuid.UUID(raw))
    except ValueError:
        raise ApiError.validation(f"{name} must be a UUID.", field=name) from None


def check_uuid(value: str, name: str) -> str:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise ApiError.validation(f"{name} must be a UUID.", field=name) from None


MAX_INT64 = 2**63 - 1  # what the databases store


def query_int(
    request: Request, name: str, default: int | None, *, minimum: int = 0, maximum: int = MAX_INT64
) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError.validation(f"{name} must be an integer.", field=name) from None
    if value < minimum or value > maximum:
        high = maximum != MAX_INT64 or value > maximum
        bound = f"between {minimum} and {maximum}" if high else f"at least {minimum}"
        raise ApiError.validation(f"{name} must be {bound}.", field=name)
    return value


def query_bool(request: Request, name: str) -> bool | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    if raw.lower() in ("true", "1"):
        return True
    if raw.lower() in ("false", "0"):
        return False
    raise ApiError.validation(f"{name} must be true or false.", field=name)


def query_list(request: Request, name: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    raw = request.query_params.get(name)
    if not raw:
        return ()
    values = tuple(v.strip() for v in raw.split(",") if v.strip())
    bad = [v for v in values if v not in allowed]
    if bad:
        raise ApiError.validation(
            f"{name} must be among {', '.join(allowed)}; got {', '.join(bad)}.", field=name
        )
    return values


def query_choice(request: Request, name: str, allowed: tuple[str, ...]) -> str | None:
    """One value out of ``allowed`` (or None); a list is refused rather than narrowed."""
    values = query_list(request, name, allowed)
    if len(values) > 1:
        raise ApiError.validation(f"{name} takes one value, not a list.", field=name)
    return values[0] if values else None


def query_time(request: Request, name: str) -> datetime | None:
    raw = request.query_params.get(name)
    if not raw:
        return None
    try:
        value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ApiError.validation(f"{name} must be an ISO 8601 timestamp.", field=name) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def encode_cursor(*parts: Any) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(list(parts))).decode().rstrip("=")


def decode_cursor(raw: str | None, kinds: tuple[type, ...]) -> tuple[Any, ...] | None:
    """An opaque cursor back to its parts; 422 when it was not made by us."""
    if not raw:
        return None
    try:
        parts = orjson.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
    except (binascii.Error, ValueError, orjson.JSONDecodeError):
        raise ApiError.validation("cursor is not valid.", field="cursor") from None
    if (
        not isinstance(parts, list)
        or len(parts) != len(kinds)
        or not all(
            isinstance(p, k) and not isinstance(p, bool) for p, k in zip(parts, kinds, strict=True)
        )
    ):
        raise ApiError.validation("cursor is not valid.", field="cursor")
    return tuple(parts)


def time_id_cursor(request: Request) -> tuple[datetime, str] | None:
    """A newest-first cursor: (created_at, id) of the last row already seen; 422 for
    anything we did not make (bad timestamp, no time zone, not a UUID)."""
    cursor = decode_cursor(request.query_params.get("cursor"), (str, str))
    if cursor is None:
        return None
    try:
        created = datetime.fromisoformat(cursor[0])
    except ValueError:
        created = None
    if created is None or created.tzinfo is None:
        raise ApiError.validation("cursor is not valid.", field="cursor")
    return created, check_uuid(cursor[1], "cursor")
