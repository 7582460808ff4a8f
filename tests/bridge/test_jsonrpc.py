"""JSON-RPC framing and correlation, tested by feeding bytes."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from agent_bridge.jsonrpc import (
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    Event,
    InvalidLine,
    JsonRpcConnection,
    LineTooLong,
    Notification,
    Request,
    Response,
    UnexpectedResponse,
)


def sent(conn: JsonRpcConnection) -> list[dict[str, Any]]:
    """Drain the connection's output, checking the framing: one message per line."""
    data = conn.data_to_send()
    assert data == b"" or data.endswith(b"\n")
    lines = data.split(b"\n")[:-1]
    return [orjson.loads(line) for line in lines]


def line(message: dict[str, Any]) -> bytes:
    return orjson.dumps(message) + b"\n"


def error_answer(id: int | str | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}


def invalid_request(id: int | str | None) -> dict[str, Any]:
    return error_answer(id, INVALID_REQUEST, "Invalid Request")


PARSE_ERROR_ANSWER = error_answer(None, PARSE_ERROR, "Parse error")

REQUEST = b'{"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{"path":"/a"}}\n'


# -- parsing ----------------------------------------------------------------------


def test_request_keeps_raw_frame_with_unknown_fields() -> None:
    conn = JsonRpcConnection()
    params = {"x": 1, "_meta": {"k": 2}}
    data = line({"jsonrpc": "2.0", "id": 1, "method": "m", "params": params, "extra": True})
    [event] = conn.receive_data(data)
    assert isinstance(event, Request)
    assert (event.id, event.method, event.params) == (1, "m", {"x": 1, "_meta": {"k": 2}})
    assert event.raw["extra"] is True
    assert sent(conn) == []


def test_string_id_request() -> None:
    conn = JsonRpcConnection()
    data = b'{"jsonrpc":"2.0","id":"4f1c-uuid","method":"session/request_permission"}\n'
    [event] = conn.receive_data(data)
    assert event == Request("4f1c-uuid", "session/request_permission", None, event.raw)


def test_notification_with_absent_array_and_null_params() -> None:
    conn = JsonRpcConnection()
    events = conn.receive_data(
        b'{"jsonrpc":"2.0","method":"a"}\n'
        b'{"jsonrpc":"2.0","method":"b","params":[1,2]}\n'
        b'{"jsonrpc":"2.0","method":"c","params":null}\n'
    )
    assert [(e.method, e.params) for e in events if isinstance(e, Notification)] == [
        ("a", None),
        ("b", [1, 2]),
        ("c", None),
    ]
    assert len(events) == 3
    assert sent(conn) == []


def test_unknown_method_is_not_decided_here() -> None:
    conn = JsonRpcConnection()
    [event] = conn.receive_data(b'{"jsonrpc":"2.0","id":3,"method":"no/such_method"}\n')
    assert isinstance(event, Request)
    assert conn.data_to_send() == b""
    conn.send_error(event.id, METHOD_NOT_FOUND, "Method not found")
    assert sent(conn) == [error_answer(3, METHOD_NOT_FOUND, "Method not found")]


# -- framing ------------------------------------------------------------------------


def test_byte_by_byte_equals_one_chunk() -> None:
    data = REQUEST + b'\r\n\n{"jsonrpc":"2.0","method":"n"}\r\n' + REQUEST
    whole = JsonRpcConnection().receive_data(data)
    conn = JsonRpcConnection()
    pieces: list[Event] = []
    for i in range(len(data)):
        pieces += conn.receive_data(data[i : i + 1])
    assert pieces == whole
    assert [type(e) for e in whole] == [Request, Notification, Request]


def test_random_fragments() -> None:
    data = b"".join(
        line({"jsonrpc": "2.0", "method": "m", "params": [i, "x" * i]}) for i in range(200)
    )
    rng = random.Random(1234)  # noqa: S311 - test data
    for _ in range(20):
        conn = JsonRpcConnection()
        events: list[Event] = []
        pos = 0
        while pos < len(data):
            step = rng.randint(1, 300)
            events += conn.receive_data(data[pos : pos + step])
            pos += step
        assert [e.params[0] for e in events if isinstance(e, Notification)] == list(range(200))


def test_many_lines_in_one_chunk_with_crlf_and_blanks() -> None:
    conn = JsonRpcConnection()
    lines = [line({"jsonrpc": "2.0", "method": str(i)})[:-1] + b"\r\n" for i in range(1000)]
    events = conn.receive_data(b"\n\r\n   \n".join(lines))
    methods = [e.method for e in events if isinstance(e, Notification)]
    assert methods == [str(i) for i in range(1000)]
    assert len(events) == 1000
    assert sent(conn) == []


def test_partial_line_waits_for_newline() -> None:
    conn = JsonRpcConnection()
    assert conn.receive_data(REQUEST[:-1]) == []
    [event] = conn.receive_data(b"\n")
    assert isinstance(event, Request)


def test_eof_parses_final_line_without_newline() -> None:
    conn = JsonRpcConnection()
    assert conn.receive_data(b'{"jsonrpc":"2.0","method":"last"}\r') == []
    [event] = conn.receive_eof()
    assert isinstance(event, Notification) and event.method == "last"
    assert conn.receive_eof() == []


def test_eof_with_partial_garbage_and_with_nothing() -> None:
    conn = JsonRpcConnection()
    conn.receive_data(b'{"jsonrpc":"2.0","met')
    [event] = conn.receive_eof()
    assert isinstance(event, InvalidLine) and event.reason == "parse_error"
    assert sent(conn) == [PARSE_ERROR_ANSWER]
    assert JsonRpcConnection().receive_eof() == []


# -- invalid input ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b'{"jsonrpc":"2.0","method":',
        b"{not json}",
        b'  {"a":NaN}',
        b'{"a":Infinity}',
        b'{"a":1e400}',
        b'[{"jsonrpc":"2.0"',
        b'{"s":"\xff\xfe"}',
    ],
)
def test_malformed_json_gets_parse_error(data: bytes) -> None:
    conn = JsonRpcConnection()
    events = conn.receive_data(data + b"\n" + REQUEST)
    assert isinstance(events[0], InvalidLine)
    assert events[0].reason == "parse_error"
    assert events[0].line == data
    assert isinstance(events[1], Request)  # the connection goes on
    assert sent(conn) == [PARSE_ERROR_ANSWER]


@pytest.mark.parametrize("data", [b"Loading model...", b"\xff\xfe garbage", b"DEBUG: {x}", b"NaN"])
def test_log_noise_is_skipped_without_answer(data: bytes) -> None:
    conn = JsonRpcConnection()
    [event] = conn.receive_data(data + b"\n")
    assert event == InvalidLine(data, "not_json")
    assert conn.data_to_send() == b""


def test_invalid_line_is_clipped() -> None:
    conn = JsonRpcConnection()
    [event] = conn.receive_data(b"{" + b"x" * 1000 + b"\n")
    assert isinstance(event, InvalidLine)
    assert event.line == (b"{" + b"x" * 1000)[:200]


@pytest.mark.parametrize(
    "data", [b"[]", b'[{"jsonrpc":"2.0","method":"m"}]', b"42", b'"str"', b"null", b"true"]
)
def test_non_object_gets_invalid_request(data: bytes) -> None:
    conn = JsonRpcConnection()
    [event] = conn.receive_data(data + b"\n")
    assert event == InvalidLine(data, "not_an_object")
    assert sent(conn) == [invalid_request(None)]


@pytest.mark.parametrize(
    ("message", "answer_id", "reason"),
    [
        ({"jsonrpc": "1.0", "id": 5, "method": "m"}, 5, "bad_version"),
        ({"id": "s", "method": "m"}, "s", "bad_version"),
        ({"jsonrpc": "1.0", "id": 1.5, "method": "m"}, None, "bad_version"),
        ({"jsonrpc": "1.0", "method": "m"}, None, "bad_version"),
        ({"jsonrpc": "2.0", "id": 5, "method": 12}, 5, "bad_method"),
        ({"jsonrpc": "2.0", "id": 5, "method": None}, 5, "bad_method"),
        ({"jsonrpc": "2.0", "id": 5, "method": "m", "params": 3}, 5, "bad_params"),
        ({"jsonrpc": "2.0", "id": 5, "method": "m", "params": "p"}, 5, "bad_params"),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "m"}, None, "bad_id"),
        ({"jsonrpc": "2.0", "id": True, "method": "m"}, None, "bad_id"),
        ({"jsonrpc": "2.0", "id": None, "method": "m"}, None, "bad_id"),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "m"}, None, "bad_id"),
        ({"jsonrpc": "2.0", "id": [1], "method": "m"}, None, "bad_id"),
        ({"jsonrpc": "2.0", "id": 5}, 5, "no_method_or_result"),
        ({}, None, "no_method_or_result"),
        # notifications (no id) the fast path for well-formed ones must leave to the checks
        ({"jsonrpc": "2.0", "method": 12}, None, "bad_method"),
        ({"jsonrpc": "2.0", "method": "m", "params": 3}, None, "bad_params"),
        ({"jsonrpc": "2.0", "method": "m", "params": "p"}, None, "bad_params"),
    ],
)
def test_bad_shape_gets_invalid_request(
    message: dict[str, Any], answer_id: Any, reason: str
) -> None:
    conn = JsonRpcConnection()
    [event] = conn.receive_data(line(message))
    assert isinstance(event, InvalidLine)
    assert event.reason == reason
    assert sent(conn) == [invalid_request(answer_id)]


def test_big_integer_id_is_invalid() -> None:
    conn = JsonRpcConnection()
    data = b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"m"}\n'
    [event] = conn.receive_data(data)
    assert isinstance(event, InvalidLine) and event.reason == "bad_id"
    assert sent(conn) == [invalid_request(None)]


def test_garbage_never_raises() -> None:
    rng = random.Random(99)  # noqa: S311 - test data
    alphabet = b'{}[]",:0123456789.eE+-truefalsnl \\\n\r\t\xff\x00"jsonrpc2.0idmethodresulterror'
    conn = JsonRpcConnection(max_line_bytes=4096)
    for _ in range(3000):
        conn.receive_data(bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 64))))
    conn.receive_eof()
    for message in sent(conn):
        assert message["error"]["message"] in {"Parse error", "Invalid Request"}


# -- responses and ids -----------------------------------------------------------------


def test_request_ids_count_up_and_responses_match() -> None:
    conn = JsonRpcConnection()
    assert conn.send_request("initialize", {"protocolVersion": 1}) == 1
    assert conn.send_request("session/new") == 2
    assert dict(conn.pending) == {1: "initialize", 2: "session/new"}
    assert sent(conn) == [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new"},
    ]
    events = conn.receive_data(
        b'{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s"},"_meta":{"x":1}}\n'
        b'{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"auth","data":[1]}}\n'
    )
    assert events[0] == Response(2, "session/new", {"sessionId": "s"}, None, events[0].raw)
    assert events[0].raw["_meta"] == {"x": 1}
    error = {"code": -32000, "message": "auth", "data": [1]}
    assert events[1] == Response(1, "initialize", None, error, events[1].raw)
    assert dict(conn.pending) == {}
    assert sent(conn) == []


def test_null_result_is_a_result() -> None:
    conn = JsonRpcConnection()
    conn.send_request("m")
    [event] = conn.receive_data(b'{"jsonrpc":"2.0","id":1,"result":null}\n')
    assert event == Response(1, "m", None, None, event.raw)


def test_string_id_does_not_match_int_id() -> None:
    conn = JsonRpcConnection()
    conn.send_request("m")
    conn.data_to_send()
    [event] = conn.receive_data(b'{"jsonrpc":"2.0","id":"1","result":{}}\n')
    assert isinstance(event, UnexpectedResponse)
    assert dict(conn.pending) == {1: "m"}
    assert sent(conn) == []


@pytest.mark.parametrize(
    "data",
    [
        b'{"jsonrpc":"2.0","id":9,"result":{}}',  # never sent
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
        b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}',  # both
        b'{"jsonrpc":"2.0","id":1,"error":"boom"}',
        b'{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"m"}}',
        b'{"jsonrpc":"2.0","id":1,"error":{"code":true,"message":"m"}}',
        b'{"jsonrpc":"2.0","id":1,"error":{"code":1}}',
        b'{"jsonrpc":"2.0","id":true,"result":{}}',
        b'{"jsonrpc":"2.0","result":{}}',
    ],
)
def test_unexpected_or_malformed_response(data: bytes) -> None:
    conn = JsonRpcConnection()
    conn.send_request("m")
    conn.data_to_send()
    [event] = conn.receive_data(data + b"\n")
    assert event == UnexpectedResponse(orjson.loads(data))
    assert dict(conn.pending) == {1: "m"}
    assert sent(conn) == []  # a response is never answered


def test_response_with_bad_version_is_skipped_unanswered() -> None:
    conn = JsonRpcConnection()
    conn.send_request("m")
    conn.data_to_send()
    [event] = conn.receive_data(b'{"jsonrpc":"1.0","id":1,"result":{}}\n')
    assert isinstance(event, InvalidLine) and event.reason == "bad_version"
    assert sent(conn) == []


def test_forget_request_makes_late_answer_unexpected() -> None:
    conn = JsonRpcConnection()
    request_id = conn.send_request("session/prompt")
    conn.forget_request(request_id)
    conn.forget_request(request_id)  # idempotent
    conn.forget_request(12345)
    assert dict(conn.pending) == {}
    [event] = conn.receive_data(b'{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}\n')
    assert isinstance(event, UnexpectedResponse)
    assert conn.send_request("x") == 2  # ids are never reused


def test_duplicate_response_is_unexpected() -> None:
    conn = JsonRpcConnection()
    conn.send_request("m")
    first, second = conn.receive_data(b'{"jsonrpc":"2.0","id":1,"result":1}\n' * 2)
    assert isinstance(first, Response)
    assert isinstance(second, UnexpectedResponse)


def test_id_spaces_are_separate() -> None:
    conn = JsonRpcConnection()
    conn.send_request("initialize")
    conn.send_request("session/prompt")
    events = conn.receive_data(
        b'{"jsonrpc":"2.0","id":2,"method":"session/request_permission","params":{}}\n'
        b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
    )
    assert isinstance(events[0], Request) and events[0].id == 2
    assert isinstance(events[1], Response) and events[1].method == "initialize"
    assert dict(conn.pending) == {2: "session/prompt"}
    conn.send_result(2, {"outcome": {"outcome": "cancelled"}})
    [event] = conn.receive_data(b'{"jsonrpc":"2.0","id":2,"result":{"stopReason":"cancelled"}}\n')
    assert isinstance(event, Response) and event.method == "session/prompt"


def test_pending_is_read_only() -> None:
    conn = JsonRpcConnection()
    conn.send_request("m")
    with pytest.raises(TypeError):
        conn.pending[2] = "x"  # type: ignore[index]


# -- line limit ------------------------------------------------------------------------


def test_line_at_limit_is_fine_and_one_more_byte_is_fatal() -> None:
    body = b'{"jsonrpc":"2.0","method":"m","params":["'
    fill = 100 - len(body) - 3
    exact = body + b"x" * fill + b'"]}'
    assert len(exact) == 100
    conn = JsonRpcConnection(max_line_bytes=100)
    [event] = conn.receive_data(exact + b"\r\n")
    assert isinstance(event, Notification)
    too_long = body + b"x" * (fill + 1) + b'"]}'
    events = conn.receive_data(exact + b"\n" + too_long + b"\n" + exact + b"\n")
    assert [type(e) for e in events] == [Notification, LineTooLong]
    assert events[1] == LineTooLong(101)
    assert conn.broken
    assert conn.receive_data(exact + b"\n") == []
    assert conn.receive_eof() == []
    assert sent(conn) == []


def test_partial_line_at_limit_waits_for_more() -> None:
    conn = JsonRpcConnection(max_line_bytes=10)
    assert conn.receive_data(b"0123456789\r") == []
    assert not conn.broken
    [event] = conn.receive_data(b"x")
    assert event == LineTooLong(12)


def test_endless_line_without_newline_stays_bounded() -> None:
    conn = JsonRpcConnection(max_line_bytes=4096)
    chunk = b"x" * 1024
    for _ in range(4):
        assert conn.receive_data(chunk) == []
    # The fifth chunk pushes the buffered partial line past the limit: detected at once.
    assert conn.receive_data(chunk) == [LineTooLong(5120)]
    assert conn.broken
    for _ in range(1000):
        assert conn.receive_data(chunk) == []
    assert conn.receive_data(b"\n" + REQUEST) == []


# -- sending -------------------------------------------------------------------------------


def test_output_framing_one_line_per_message() -> None:
    conn = JsonRpcConnection()
    conn.send_notification("session/cancel", {"sessionId": "s"})
    conn.send_notification("ping")
    conn.send_result("abc", {"text": "line one\nline two\r\n\u2028"})
    conn.send_error(4, -32000, "Auth required", {"hint": "login"})
    conn.send_error(None, PARSE_ERROR, "Parse error")
    data = conn.data_to_send()
    assert data.count(b"\n") == 5 and data.endswith(b"\n")
    assert [orjson.loads(x) for x in data.splitlines()] == [
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}},
        {"jsonrpc": "2.0", "method": "ping"},
        {"jsonrpc": "2.0", "id": "abc", "result": {"text": "line one\nline two\r\n\u2028"}},
        {
            "jsonrpc": "2.0",
            "id": 4,
            "error": {"code": -32000, "message": "Auth required", "data": {"hint": "login"}},
        },
        PARSE_ERROR_ANSWER,
    ]
    assert conn.data_to_send() == b""


def test_result_may_be_null() -> None:
    conn = JsonRpcConnection()
    conn.send_result(1, None)
    assert sent(conn) == [{"jsonrpc": "2.0", "id": 1, "result": None}]


def test_unserializable_request_changes_nothing() -> None:
    conn = JsonRpcConnection()
    with pytest.raises(TypeError):
        conn.send_request("m", {"bad": object()})
    assert dict(conn.pending) == {}
    assert conn.data_to_send() == b""
    assert conn.send_request("m") == 1


def test_errors_sent_for_bad_input_carry_no_exception_text() -> None:
    conn = JsonRpcConnection()
    conn.receive_data(b'{"jsonrpc":"2.0","id":1,"params":{"a":NaN}}\n[1,2]\n{"id":[]}\n')
    raw = conn.data_to_send()
    assert b"NaN" not in raw and b"unexpected" not in raw and b"line 1" not in raw
    messages = {m["error"]["message"] for m in map(orjson.loads, raw.splitlines())}
    assert messages == {"Parse error", "Invalid Request"}


# -- what the fast parser refuses ---------------------------------------------------------


def test_lone_surrogate_request_is_parsed_and_answered_with_its_id() -> None:
    """Valid JSON orjson refuses (a lone surrogate escape) is parsed the standard way:
    the request reaches the handler, its strings made safe to store and send."""
    conn = JsonRpcConnection()
    data = b'{"jsonrpc":"2.0","id":9,"method":"m","params":{"s":"a\\ud800b","\\udfff":1}}\n'
    [event] = conn.receive_data(data)
    assert isinstance(event, Request)
    assert (event.id, event.method, event.params) == (9, "m", {"s": "a\ufffdb", "\ufffd": 1})
    orjson.dumps(event.raw)  # encodable downstream
    conn.send_result(event.id, {})
    assert sent(conn) == [{"jsonrpc": "2.0", "id": 9, "result": {}}]


def test_lone_surrogate_in_a_string_id_is_echoed_exactly() -> None:
    conn = JsonRpcConnection()
    [event] = conn.receive_data(b'{"jsonrpc":"2.0","id":"x\\ud800","method":"m"}\n')
    assert isinstance(event, Request) and event.id == "x\ud800"
    conn.send_error(event.id, METHOD_NOT_FOUND, "Method not found")
    data = conn.data_to_send()
    assert data == (
        b'{"jsonrpc": "2.0", "id": "x\\ud800", "error": '
        b'{"code": -32601, "message": "Method not found"}}\n'
    )


def test_lone_surrogate_notification_and_response_are_parsed() -> None:
    conn = JsonRpcConnection()
    request_id = conn.send_request("ask")
    conn.data_to_send()
    events = conn.receive_data(
        b'{"jsonrpc":"2.0","method":"note","params":["\\udc00"]}\n'
        + b'{"jsonrpc":"2.0","id":%d,"result":{"t":"\\ud83d"}}\n' % request_id
    )
    assert isinstance(events[0], Notification) and events[0].params == ["\ufffd"]
    assert isinstance(events[1], Response) and events[1].result == {"t": "\ufffd"}


def test_nesting_deeper_than_any_parser_allows_is_answered_with_its_id() -> None:
    conn = JsonRpcConnection()
    deep = b"[" * 5000 + b"]" * 5000
    data = b'{"jsonrpc":"2.0","id":3,"method":"m","params":{"d":' + deep + b"}}\n"
    [event] = conn.receive_data(data)
    assert isinstance(event, InvalidLine) and event.reason == "parse_error"
    assert sent(conn) == [error_answer(3, PARSE_ERROR, "Parse error")]


@pytest.mark.parametrize(
    ("data", "answer_id"),
    [
        (b'{"jsonrpc":"2.0","id":41,"method":"m","params":{"s":"\xff"}}', 41),
        (b'{"jsonrpc":"2.0","id":"r-1","method":"m","params":{"a":NaN}}', "r-1"),
        (b'{"jsonrpc":"2.0","method":"m","id":-5,"params":{"a":1e400}}', -5),
        (b'{"jsonrpc":"2.0","id":"q\\"s","method":"m","params":', 'q"s'),
        (b'{"jsonrpc":"2.0","params":{"id":1,"x":"}{"},"id":2,"method":', 2),
        (b'{"params":{"id":1},"method":"m" oops', None),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"m",}', None),
        (b'{"jsonrpc":"2.0","id":true,"method":"m",}', None),
        (b'{"jsonrpc":"2.0","id":01,"method":"m",}', None),
        (b'{"jsonrpc":"2.0","method":"m","text":"\\"id\\": 4",}', None),
    ],
)
def test_unparseable_request_is_answered_with_its_id(data: bytes, answer_id: Any) -> None:
    """A line no parser accepts is answered -32700 with its top-level id when it has
    one: the agent waiting for that request is not left waiting for ever."""
    conn = JsonRpcConnection()
    events = conn.receive_data(data + b"\n" + REQUEST)
    assert isinstance(events[0], InvalidLine) and events[0].reason == "parse_error"
    assert isinstance(events[1], Request)
    assert sent(conn) == [error_answer(answer_id, PARSE_ERROR, "Parse error")]


def test_unparseable_answer_to_our_request_fails_it() -> None:
    conn = JsonRpcConnection()
    request_id = conn.send_request("ask")
    conn.data_to_send()
    [event] = conn.receive_data(b'{"jsonrpc":"2.0","id":%d,"result":{"s":"\xff"}}\n' % request_id)
    assert isinstance(event, Response) and event.method == "ask"
    assert event.error == {"code": PARSE_ERROR, "message": "Parse error"}
    assert conn.pending == {}
    assert conn.data_to_send() == b""


@pytest.mark.parametrize("params", [None, {}, {"update": {"a": 1}}, [1, "two"]])
def test_notifications_in_one_read_keep_their_order_and_params(params: Any) -> None:
    conn = JsonRpcConnection()
    note: dict[str, Any] = {"jsonrpc": "2.0", "method": "session/update"}
    if params is not None:
        note["params"] = params
    request = {"jsonrpc": "2.0", "id": 7, "method": "fs/read_text_file", "params": {}}
    events = conn.receive_data(
        line(note) + line(request) + b"\r\n" + line(note).replace(b"\n", b"\r\n")
    )
    assert events == [
        Notification("session/update", params, note),
        Request(7, "fs/read_text_file", {}, request),
        Notification("session/update", params, note),
    ]
    assert sent(conn) == []
