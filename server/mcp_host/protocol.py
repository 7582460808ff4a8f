"""The MCP side of a tool server, apart from I/O: protocol version negotiation, parsing
a POST body into JSON-RPC events (``agent_bridge.jsonrpc``'s core, one message per
line), and the results of ``initialize`` and ``tools/list``."""

from __future__ import annotations

import msgspec
import orjson

from agent_bridge.jsonrpc import (
    INVALID_REQUEST,
    PARSE_ERROR,
    Event,
    JsonRpcConnection,
    Notification,
    Request,
)
from agent_bridge.jsontypes import JsonObject

__all__ = [
    "LATEST_VERSION",
    "SUPPORTED_VERSIONS",
    "Parsed",
    "initialize_result",
    "negotiate",
    "parse_body",
]

# Newest first. The transport (POST answered with JSON or an event stream, GET for the
# server's own messages, Mcp-Session-Id) is the same for all three here.
SUPPORTED_VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")
LATEST_VERSION = SUPPORTED_VERSIONS[0]
SERVER_INFO = {"name": "agent-sessions client-tools", "version": "1"}


def negotiate(requested: object) -> str:
    """The client's version when we speak it, else our newest (the client then decides
    whether it can go on, as MCP's lifecycle says)."""
    return (
        requested
        if isinstance(requested, str) and requested in SUPPORTED_VERSIONS
        else (LATEST_VERSION)
    )


def initialize_result(version: str) -> JsonObject:
    return {
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": True}},
        "serverInfo": dict(SERVER_INFO),
        "instructions": "Tools that the person's client (a web page or a script) carries "
        "out; a call waits until a client answers it.",
    }


class Parsed(msgspec.Struct, frozen=True):
    calls: list[Request | Notification]  # in order; responses to us are ignored
    batch: bool
    error: bytes | None  # a JSON-RPC error answer for an unreadable body


def parse_body(body: bytes) -> Parsed:
    """A POST body: one JSON-RPC message or a batch (2025-03-26). A body that is not
    JSON, or not a message, is answered with a JSON-RPC error and nothing runs."""
    conn = JsonRpcConnection(max_line_bytes=max(len(body), 1) + 1)
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        conn.send_error(None, PARSE_ERROR, "Parse error")
        return Parsed([], False, conn.data_to_send())
    batch = isinstance(message, list)
    items = message if batch else [message]
    if not items:
        conn.send_error(None, INVALID_REQUEST, "Invalid Request")
        return Parsed([], False, conn.data_to_send())
    events: list[Event] = []
    for item in items:  # one line each: the core frames by newline
        events += conn.receive_data(orjson.dumps(item) + b"\n")
    error = conn.data_to_send()  # what the core answered itself (an invalid message)
    calls = [e for e in events if isinstance(e, Request | Notification)]
    return Parsed(calls, batch, error or None)
