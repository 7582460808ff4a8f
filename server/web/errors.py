"""The one place where exceptions become HTTP statuses and error bodies (API.md, Errors)."""

from __future__ import annotations

import logging
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

import server.sessions as domain
from agent_bridge.jsontypes import JsonObject
from server.web.jsonresp import JSONResponse

__all__ = ["ApiError", "DOMAIN_STATUS", "domain_status", "exception_handlers", "error_response"]

log = logging.getLogger("agent_sessions.http")

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


class ApiError(Exception):
    """An error with its HTTP status, machine code and a sentence for people."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: JsonObject | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details or {}
        self.headers = headers or {}

    # Constructors for the recurring ones.
    @classmethod
    def not_found(cls, what: str, ident: str) -> ApiError:
        return cls(
            404, f"{what}_not_found", f"No {what.replace('_', ' ')} with id {ident}.", {"id": ident}
        )

    @classmethod
    def validation(cls, message: str, **details: Any) -> ApiError:
        return cls(422, "validation_error", message, details)

    @classmethod
    def too_large(cls, what: str, limit: int) -> ApiError:
        return cls(
            413, "payload_too_large", f"The {what} is larger than {limit} bytes.", {"limit": limit}
        )


# The one table from the domain's refusals to HTTP statuses (WebSocket error frames carry
# the same codes). A subclass not listed takes its nearest listed base.
DOMAIN_STATUS: dict[type[domain.DomainError], int] = {
    domain.Invalid: 422,
    domain.Forbidden: 403,
    domain.NotFound: 404,
    domain.Conflict: 409,
    domain.TooLarge: 413,
    domain.LimitReached: 429,
    domain.AgentStartFailed: 502,
    domain.Unavailable: 503,
}


def domain_status(exc: domain.DomainError) -> int:
    for kind in type(exc).__mro__:
        status = DOMAIN_STATUS.get(kind)
        if status is not None:
            return status
    return 500


def error_response(
    status: int,
    code: str,
    message: str,
    details: JsonObject | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body = {"error": {"code": code, "message": message, "details": details or {}}}
    return JSONResponse(body, status_code=status, headers=headers)


async def _api_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.code, exc.message, exc.details, exc.headers)


async def _domain_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, domain.DomainError)
    headers = None
    if isinstance(exc, domain.LimitReached):
        headers = {"Retry-After": str(exc.retry_after)}
    return error_response(domain_status(exc), exc.code, exc.message, exc.details, headers)


async def _http_exception(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = _HTTP_CODES.get(exc.status_code, "error")
    message = exc.detail if isinstance(exc.detail, str) else "Request failed."
    if exc.status_code == 404:
        message = "No such route."
    return error_response(exc.status_code, code, message, headers=dict(exc.headers or {}))


async def _unexpected(request: Request, exc: Exception) -> Response:
    request_id = getattr(request.state, "request_id", None)
    log.error("unhandled error", exc_info=exc, extra={"request_id": request_id})
    # Starlette answers this from its outermost middleware, outside RequestIdMiddleware:
    # the header is added here so that a 500 carries it like every other response.
    return error_response(
        500,
        "internal_error",
        "Something went wrong on the server.",
        {"requestId": request_id},
        headers={"X-Request-ID": request_id} if request_id else None,
    )


exception_handlers: dict[Any, Any] = {
    ApiError: _api_error,
    domain.DomainError: _domain_error,
    HTTPException: _http_exception,
    Exception: _unexpected,
}
