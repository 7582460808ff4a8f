"""Sans-I/O JSON-RPC 2.0 over newline-delimited JSON.

Bytes go in through `receive_data`/`receive_eof` and come out as events;
messages to send are framed into a buffer that `data_to_send` drains. No I/O,
no concurrency: the driver owns both (the h11/wsproto split).

Invalid input never raises: it becomes an `InvalidLine` event, sometimes with an
error answer queued for the peer, or, for an over-long line, a fatal
`LineTooLong`. Answers carry fixed messages only, never exception text.
Which methods exist is not decided here: the ACP layer answers -32601 itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, TypeAlias

import msgspec
import orjson

from agent_bridge.jsontypes import JsonObject, JsonValue
from agent_bridge.lenient import find_id, loads_standard, scrub

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "Event",
    "InvalidLine",
    "JsonRpcConnection",
    "LineTooLong",
    "Notification",
    "Request",
    "RequestId",
    "Response",
    "UnexpectedResponse",
]

RequestId: TypeAlias = int | str

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

_CLIP: Final = 200  # bytes of an invalid line kept in its event


class Request(msgspec.Struct, frozen=True):
    """A call from the peer that expects `send_result` or `send_error`."""

    id: RequestId
    method: str
    params: JsonValue
    raw: JsonObject


class Notification(msgspec.Struct):  # one per agent update
    """A call from the peer that expects no answer (treat it as immutable)."""

    method: str
    params: JsonValue
    raw: JsonObject


class Response(msgspec.Struct, frozen=True):
    """The answer to one of our requests; `method` is the method we called."""

    id: RequestId
    method: str
    result: JsonValue
    error: JsonObject | None
    raw: JsonObject


class InvalidLine(msgspec.Struct, frozen=True):
    """A skipped line (clipped to 200 bytes); an error answer may have been queued."""

    line: bytes
    reason: str


class UnexpectedResponse(msgspec.Struct, frozen=True):
    """A response we cannot match to a pending request, or a malformed response."""

    raw: JsonObject


class LineTooLong(msgspec.Struct, frozen=True):
    """Fatal: a line outgrew the limit. The connection is broken; close it."""

    size: int


Event: TypeAlias = (
    Request | Notification | Response | InvalidLine | UnexpectedResponse | LineTooLong
)


def _is_id(value: object) -> bool:
    """True for a usable request id: an int (not a bool) or a str."""
    return type(value) is int or type(value) is str


def _is_error_object(value: object) -> bool:
    return (
        type(value) is dict and type(value.get("code")) is int and type(value.get("message")) is str
    )


class JsonRpcConnection:
    """One JSON-RPC peer: framing, request ids and response correlation."""

    def __init__(self, *, max_line_bytes: int = 64 * 1024 * 1024) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be at least 1")
        self._max_line_bytes = max_line_bytes
        self._buffer = bytearray()
        self._scanned = 0  # bytes of _buffer already known to hold no newline
        self._outgoing = bytearray()
        self._next_id = 1
        self._pending: dict[int, str] = {}
        self._broken = False

    @property
    def pending(self) -> Mapping[int, str]:
        """Outstanding outgoing requests: id -> method (read-only view)."""
        return MappingProxyType(self._pending)

    @property
    def broken(self) -> bool:
        """True once a line outgrew the limit; no more input is parsed."""
        return self._broken

    # -- receiving -----------------------------------------------------------

    def receive_data(self, data: bytes) -> list[Event]:
        """Feed bytes from the peer; return the events of every complete line."""
        if self._broken:
            return []
        buffer = self._buffer
        buffer += data
        events: list[Event] = []
        append = events.append
        loads, decode_error, notification = orjson.loads, orjson.JSONDecodeError, Notification
        start = 0
        newline = buffer.find(b"\n", self._scanned)
        while newline >= 0:
            end = newline - 1 if newline > start and buffer[newline - 1] == 13 else newline
            if end - start > self._max_line_bytes:
                return self._fail(events, end - start)
            if end > start:
                # A well-formed notification (nearly every line of an agent's flood)
                # is taken here, without the checks' call chain (_receive_line).
                line = buffer[start:end]
                try:
                    message = loads(line)
                except decode_error:
                    event = self._receive_lenient(line)
                else:
                    if (
                        type(message) is dict
                        and type(method := message.get("method")) is str
                        and "id" not in message
                        and message.get("jsonrpc") == "2.0"
                        and (type(params := message.get("params")) is dict or params is None)
                    ):
                        append(notification(method, params, message))
                        event = None
                    else:
                        event = self._receive_message(message, line)
                if event is not None:
                    append(event)
            start = newline + 1
            newline = buffer.find(b"\n", start)
        if start:
            del buffer[:start]
        self._scanned = len(buffer)
        pending = self._scanned - (1 if buffer.endswith(b"\r") else 0)
        if pending > self._max_line_bytes:
            return self._fail(events, pending)
        return events

    def receive_eof(self) -> list[Event]:
        """The peer closed its side: parse a final line that has no newline."""
        if self._broken or not self._buffer:
            return []
        line = self._buffer
        self._buffer = bytearray()
        self._scanned = 0
        if line.endswith(b"\r"):
            del line[-1:]
        event = self._receive_line(line) if line else None
        return [event] if event is not None else []

    def _fail(self, events: list[Event], size: int) -> list[Event]:
        self._broken = True
        self._buffer = bytearray()
        self._scanned = 0
        events.append(LineTooLong(size))
        return events

    def _receive_line(self, line: bytearray) -> Event | None:
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            return self._receive_lenient(line)
        return self._receive_message(message, line)

    def _receive_lenient(self, line: bytearray) -> Event | None:
        """A line orjson refused: standard JSON it refuses (a lone surrogate escape, deep
        nesting) is parsed the slow way and made safe to encode; a string id is kept
        exact, so the answer echoes it."""
        try:
            message = loads_standard(line)
        except ValueError:
            return self._receive_garbage(line)
        exact_id = message.get("id") if type(message) is dict else None
        event = self._receive_message(scrub(message), line)
        if isinstance(event, Request) and type(exact_id) is str:
            return msgspec.structs.replace(event, id=exact_id)
        return event

    def _receive_message(self, message: JsonValue, line: bytearray) -> Event:
        if type(message) is not dict:
            self._queue_error(None, INVALID_REQUEST, "Invalid Request")
            return InvalidLine(bytes(line[:_CLIP]), "not_an_object")
        if "method" in message:
            return self._receive_call(message, line)
        if "result" in message or "error" in message:
            return self._receive_response(message, line)
        return self._reject(message, line, "no_method_or_result")

    def _receive_garbage(self, line: bytearray) -> InvalidLine | Response | None:
        stripped = line.lstrip()
        if not stripped:
            return None  # whitespace only: a blank line
        if stripped.startswith((b"{", b"[")):
            # A request in it is still answered, with its id when one can be told.
            broken = find_id(stripped) if stripped.startswith(b"{") else None
            answer_id = broken.id if broken is not None else None
            if type(answer_id) is int and broken is not None and not broken.is_call:
                method = self._pending.pop(answer_id, None)
                if method is not None:  # the answer to our request, unreadable: it failed
                    error = {"code": PARSE_ERROR, "message": "Parse error"}
                    return Response(answer_id, method, None, error, {})
            self._queue_error(answer_id, PARSE_ERROR, "Parse error")
            return InvalidLine(bytes(line[:_CLIP]), "parse_error")
        return InvalidLine(bytes(line[:_CLIP]), "not_json")  # log noise: no answer

    def _receive_call(self, message: JsonObject, line: bytearray) -> Event:
        method = message["method"]
        params = message.get("params")  # an explicit null counts as absent
        if message.get("jsonrpc") != "2.0":
            return self._reject(message, line, "bad_version")
        if type(method) is not str:
            return self._reject(message, line, "bad_method")
        if params is not None and type(params) is not dict and type(params) is not list:
            return self._reject(message, line, "bad_params")
        if "id" not in message:
            return Notification(method, params, message)
        request_id = message["id"]
        if not _is_id(request_id):
            return self._reject(message, line, "bad_id")
        return Request(request_id, method, params, message)

    def _receive_response(self, message: JsonObject, line: bytearray) -> Event:
        # A response is never answered, even a bad one: answering could ping-pong.
        if message.get("jsonrpc") != "2.0":
            return InvalidLine(bytes(line[:_CLIP]), "bad_version")
        response_id = message.get("id")
        has_error = "error" in message
        if ("result" in message) == has_error or type(response_id) is not int:
            return UnexpectedResponse(message)  # str ids are never ours
        error = message["error"] if has_error else None
        if has_error and not _is_error_object(error):
            return UnexpectedResponse(message)
        method = self._pending.pop(response_id, None)
        if method is None:
            return UnexpectedResponse(message)
        return Response(response_id, method, message.get("result"), error, message)

    def _reject(self, message: JsonObject, line: bytearray, reason: str) -> InvalidLine:
        """Answer an invalid request with -32600, echoing its id when usable."""
        request_id = message.get("id")
        self._queue_error(
            request_id if _is_id(request_id) else None, INVALID_REQUEST, "Invalid Request"
        )
        return InvalidLine(bytes(line[:_CLIP]), reason)

    # -- sending -------------------------------------------------------------

    def send_request(self, method: str, params: JsonValue = None) -> int:
        """Queue a request; return its id (ints from 1 upward), now pending."""
        request_id = self._next_id
        message: JsonObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._queue(message)
        self._next_id += 1
        self._pending[request_id] = method
        return request_id

    def send_notification(self, method: str, params: JsonValue = None) -> None:
        """Queue a notification."""
        message: JsonObject = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._queue(message)

    def send_result(self, id: RequestId, result: JsonValue) -> None:
        """Queue a successful answer to the peer's request `id`."""
        self._queue({"jsonrpc": "2.0", "id": id, "result": result})

    def send_error(
        self,
        id: RequestId | None,
        code: int,
        message: str,
        data: JsonValue = None,
    ) -> None:
        """Queue an error answer; `id` is None when the request's id is unknown."""
        self._queue_error(id, code, message, data)

    def forget_request(self, id: int) -> None:
        """Stop waiting for `id`; a later answer becomes an UnexpectedResponse."""
        self._pending.pop(id, None)

    def data_to_send(self) -> bytes:
        """Drain the outgoing buffer: whole lines, each ending in a newline."""
        data = bytes(self._outgoing)
        self._outgoing.clear()
        return data

    def _queue_error(
        self, id: RequestId | None, code: int, message: str, data: JsonValue = None
    ) -> None:
        error: JsonObject = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._queue({"jsonrpc": "2.0", "id": id, "error": error})

    def _queue(self, message: JsonObject) -> None:
        # orjson escapes control characters, so a message is always exactly one line.
        try:
            self._outgoing += orjson.dumps(message, option=orjson.OPT_APPEND_NEWLINE)
        except orjson.JSONEncodeError:
            # An id the peer sent with a lone surrogate escape: echo it exactly.
            self._outgoing += json.dumps(message, allow_nan=False).encode() + b"\n"
