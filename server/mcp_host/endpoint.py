"""``/mcp/sessions/{id}``: MCP's streamable HTTP transport for one session's tool server.

- ``POST`` carries the agent's JSON-RPC messages. Only notifications (or responses):
  202. ``initialize`` makes an MCP session (its id in ``Mcp-Session-Id``); every other
  request names it (400 without, 404 for one that ended). Requests are answered with
  JSON, except a ``tools/call`` that the agent accepts as an event stream: that one waits
  on a client for up to CLIENT_TOOL_TIMEOUT, so its answer is an event stream with a
  comment line every ``KEEPALIVE`` seconds (an HTTP client's idle timeout never ends it).
- ``GET`` (``Accept: text/event-stream``) is the MCP session's event stream:
  ``notifications/tools/list_changed`` when a client changes the set.
- ``DELETE`` ends the MCP session.

Every request carries ``Authorization: Bearer <secret>``, the secret made for the agent
process that the server was offered to; anything else is 401, whatever the session.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

import anyio
import orjson
from starlette.requests import Request as HttpRequest
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from agent_bridge.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, Notification, Request
from agent_bridge.jsontypes import JsonObject, JsonValue
from server.mcp_host.protocol import (
    SUPPORTED_VERSIONS,
    initialize_result,
    negotiate,
    parse_body,
)
from server.mcp_host.sessions import McpSession, McpSessions

__all__ = ["KEEPALIVE", "ToolHost", "mcp_route"]

log = logging.getLogger("agent_sessions.mcp")

KEEPALIVE = 15.0  # seconds between comment lines on a waiting event stream
SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
JSON = "application/json"
EVENTS = "text/event-stream"


class ToolHost(Protocol):
    """What the endpoint needs of the session's side (``ClientToolHost``)."""

    mcp: McpSessions

    def accepts(self, presented: str) -> bool: ...

    def listed(self) -> list[JsonObject]: ...

    async def call(self, name: str, arguments: JsonValue) -> JsonObject: ...


FindHost = Callable[[HttpRequest, str], ToolHost | None]


def _plain(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> Response:
    """An HTTP-level refusal, in the API's error shape (API.md "Errors"); what MCP
    clients read of it is the status."""
    body = orjson.dumps({"error": {"code": code, "message": message, "details": {}}})
    return Response(body, status, headers=headers, media_type=JSON)


def _bearer(request: HttpRequest) -> str:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def _result(id: JsonValue, result: JsonObject) -> JsonObject:
    return {"jsonrpc": "2.0", "id": id, "result": result}


def _error(id: JsonValue, code: int, message: str) -> JsonObject:
    return {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}


def mcp_route(find_host: FindHost) -> Route:
    async def endpoint(request: HttpRequest) -> Response:
        host = find_host(request, request.path_params["session_id"])
        presented = _bearer(request)
        if host is None or not presented or not host.accepts(presented):
            return _plain(
                401,
                "unauthorized",
                "This MCP server takes the secret made for its agent.",
                {"WWW-Authenticate": "Bearer"},
            )
        if request.method == "POST":
            return await _post(request, host)
        session, refused = _session_of(request, host)
        if session is None:
            assert refused is not None
            return refused
        if request.method == "DELETE":
            host.mcp.end(session.id)
            return Response(status_code=204)
        if EVENTS not in request.headers.get("accept", ""):
            return _plain(
                405,
                "method_not_allowed",
                "GET is the event stream: it takes Accept: text/event-stream.",
                {"Allow": "POST, DELETE"},
            )
        return _event_stream(host, session)

    return Route("/mcp/sessions/{session_id}", endpoint, methods=["GET", "POST", "DELETE"])


def _session_of(request: HttpRequest, host: ToolHost) -> tuple[McpSession | None, Response | None]:
    session_id = request.headers.get(SESSION_HEADER)
    if not session_id:
        return None, _plain(400, "mcp_session_required", "Mcp-Session-Id is required.")
    session = host.mcp.get(session_id)
    if session is None:
        return None, _plain(404, "mcp_session_not_found", "No such MCP session (or it ended).")
    version = request.headers.get(VERSION_HEADER)
    if version is not None and version not in SUPPORTED_VERSIONS:
        return None, _plain(
            400,
            "unsupported_protocol_version",
            f"MCP-Protocol-Version {version} is not spoken here.",
        )
    return session, None


async def _post(request: HttpRequest, host: ToolHost) -> Response:
    parsed = parse_body(await request.body())
    if parsed.error is not None and not parsed.calls:
        return _plain(400, "invalid_json", "The body is not a JSON-RPC message.")
    first = parsed.calls[0] if parsed.calls else None
    if isinstance(first, Request) and first.method == "initialize" and not parsed.batch:
        params = first.params if isinstance(first.params, dict) else {}
        made = host.mcp.open(negotiate(params.get("protocolVersion")))
        body = orjson.dumps(_result(first.id, initialize_result(made.protocol_version)))
        return Response(body, media_type=JSON, headers={"Mcp-Session-Id": made.id})
    session, refused = _session_of(request, host)
    if session is None:
        assert refused is not None
        return refused
    requests = [c for c in parsed.calls if isinstance(c, Request)]
    for call in parsed.calls:
        if isinstance(call, Notification):
            _notified(session, call)
    if not requests:
        return Response(status_code=202)
    streams = EVENTS in request.headers.get("accept", "")
    if streams and any(r.method == "tools/call" for r in requests):
        return _answer_stream(host, session, requests, parsed.batch)
    answers = [await _answer(host, session, r) for r in requests]
    return Response(orjson.dumps(answers if parsed.batch else answers[0]), media_type=JSON)


def _notified(session: McpSession, note: Notification) -> None:
    params = note.params if isinstance(note.params, dict) else {}
    if note.method == "notifications/cancelled":
        request_id = params.get("requestId")
        if isinstance(request_id, int | str):
            session.cancel(request_id)


async def _answer(host: ToolHost, session: McpSession, request: Request) -> JsonObject:
    params = request.params if isinstance(request.params, dict) else {}
    if request.method == "ping":
        return _result(request.id, {})
    if request.method == "tools/list":
        return _result(request.id, {"tools": host.listed()})
    if request.method != "tools/call":
        return _error(request.id, METHOD_NOT_FOUND, "Method not found")
    name = params.get("name")
    if not isinstance(name, str):
        return _error(request.id, INVALID_PARAMS, "name must be a string")
    with anyio.CancelScope() as scope:
        session.inflight[request.id] = scope
        try:
            return _result(request.id, await host.call(name, params.get("arguments")))
        finally:
            session.inflight.pop(request.id, None)
    return _error(request.id, -32800, "Request cancelled")


Emit = Callable[[bytes], Awaitable[None]]


class EventStream(Response):
    """An event stream whose body ``run`` writes through ``emit``, with a comment line
    every ``KEEPALIVE`` seconds while it says nothing (an HTTP client's idle timeout never
    ends a wait on a person), ended when the client goes away (``run`` is cancelled)."""

    def __init__(self, run: Callable[[Emit], Awaitable[None]]) -> None:
        # Not Response.__init__: it declares a Content-Length for the (empty) body.
        self.status_code = 200
        self.background = None
        self.raw_headers = [
            (b"content-type", EVENTS.encode()),
            (b"cache-control", b"no-store"),
            (b"x-accel-buffering", b"no"),  # a proxy in front must not hold the events back
        ]
        self._run = run

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        spoke = anyio.Event()

        async def emit(chunk: bytes) -> None:
            spoke.set()
            await send({"type": "http.response.body", "body": chunk, "more_body": True})

        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                tg.cancel_scope.cancel()

            async def keep_alive() -> None:
                nonlocal spoke
                while True:
                    with anyio.move_on_after(KEEPALIVE):
                        await spoke.wait()
                    if not spoke.is_set():
                        await emit(b": waiting\n\n")
                    spoke = anyio.Event()

            async def run() -> None:
                await self._run(emit)
                tg.cancel_scope.cancel()

            tg.start_soon(watch)
            tg.start_soon(keep_alive)
            tg.start_soon(run)
        with anyio.move_on_after(1, shield=True):  # the end of the body, if it can go
            try:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            except OSError:
                pass


def _answer_stream(
    host: ToolHost, session: McpSession, requests: list[Request], batch: bool
) -> Response:
    """The answers as one ``message`` event."""

    async def run(emit: Emit) -> None:
        answers = [await _answer(host, session, request) for request in requests]
        await emit(
            b"event: message\ndata: " + orjson.dumps(answers if batch else answers[0]) + b"\n\n"
        )

    return EventStream(run)


def _event_stream(host: ToolHost, session: McpSession) -> Response:
    async def run(emit: Emit) -> None:
        stream = host.mcp.subscribe(session)
        try:
            await emit(b": open\n\n")  # headers and a first byte now: the client sees it is up
            async for frame in stream:
                await emit(b"event: message\ndata: " + frame + b"\n\n")
        finally:
            host.mcp.unsubscribe(session, stream)

    return EventStream(run)
