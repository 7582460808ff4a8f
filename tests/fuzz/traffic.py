"""Hypothesis strategies for what a hostile or broken agent writes: JSON-RPC traffic
with random methods, ids of every JSON type, huge, nested and invalid params, answers to
ids nobody asked, bytes that are not UTF-8, lines cut at random points across writes,
CR/LF mixes. Each drawn ``Traffic`` knows which of its lines are requests that must be
answered, by id."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from tests.fuzz.support import write

METHODS = [
    "fs/read_text_file",
    "session/request_permission",
    "elicitation/create",
    "session/update",
    "terminal/output",
    "terminal/wait_for_exit",
    "terminal/kill",
    "terminal/release",
    "initialize",
    "session/prompt",
    "x/unknown",
]
UPDATE_KINDS = [
    "agent_message_chunk",
    "agent_thought_chunk",
    "user_message_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "usage_update",
    "session_info_update",
    "available_commands_update",
    "current_mode_update",
    "no_such_update",
]

UPDATE_FIELDS = [
    "content",
    "toolCallId",
    "status",
    "title",
    "entries",
    "used",
    "size",
    "cost",
    "kind",
    "rawInput",
    "rawOutput",
    "locations",
]

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=30,
)
valid_ids = (
    st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.text(max_size=20)
    | st.just("lone \ud800 surrogate")
)
# Never the id of a request the server has pending (its ids count from 1): an answer to
# it would be an answer, a broken one with no "method" the failure of that request.
unknown_ids = st.integers(min_value=2**32, max_value=2**62) | st.text(max_size=8)
invalid_ids = (
    st.none()
    | st.booleans()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.lists(st.integers(), max_size=2)
    | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)
    | st.just(2**70)
)


def key(value: Any) -> str:
    """How ids are compared: exact JSON (1 and "1" differ)."""
    return json.dumps(value, sort_keys=True)


def dumps(message: Any) -> bytes:
    return json.dumps(message).encode()  # ensure_ascii: a lone surrogate stays an escape


@st.composite
def huge_or_nested(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["huge", "nested", "value"]))
    if kind == "huge":
        return {"text": "x" * draw(st.integers(min_value=10_000, max_value=300_000))}
    if kind == "nested":
        depth = draw(st.integers(min_value=10, max_value=400))
        value: Any = "bottom"
        for _ in range(depth):
            value = {"d": value} if draw(st.booleans()) else [value]
        return value
    return draw(json_values)


@st.composite
def update_params(draw: st.DrawFn) -> Any:
    fields = draw(st.dictionaries(st.sampled_from(UPDATE_FIELDS), json_values, max_size=5))
    update = {"sessionUpdate": draw(st.sampled_from(UPDATE_KINDS)), **fields}
    return {"sessionId": "raw", "update": update}


@dataclass(repr=False)
class Traffic:
    lines: list[bytes] = field(default_factory=list)
    expected: Counter[str] = field(default_factory=Counter)  # id key -> answers owed
    ids: list[Any] = field(default_factory=list)  # the ids owed, as sent
    steps: list[dict[str, str]] = field(default_factory=list)  # the agent's writes

    def __repr__(self) -> str:
        """Short enough for a report: each line clipped to 120 bytes, with its size."""
        shown = [f"{len(line)}B {line[:120]!r}" for line in self.lines]
        return f"Traffic({len(self.steps)} writes, lines=[{', '.join(shown)}])"

    def owe(self, request_id: Any) -> None:
        self.expected[key(request_id)] += 1
        self.ids.append(request_id)


@st.composite
def lines(draw: st.DrawFn, traffic: Traffic) -> None:
    """Draw one line into ``traffic``."""
    kind = draw(
        st.sampled_from(
            [
                "request",
                "request",
                "bad_id_request",
                "notification",
                "update",
                "answer_unknown",
                "truncated_request",
                "non_utf8_request",
                "too_deep_request",
                "garbage",
                "json_non_object",
            ]
        )
    )
    method = draw(st.sampled_from(METHODS) | st.text(max_size=15))
    if kind == "request":
        request_id = draw(valid_ids)
        params = draw(huge_or_nested() | update_params() | st.none())
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        traffic.lines.append(dumps(message))
        traffic.owe(request_id)  # bad params (a scalar) too: -32600 with its id
    elif kind == "bad_id_request":  # answered -32600 with id null: nothing owed by id
        bad = draw(invalid_ids)
        traffic.lines.append(dumps({"jsonrpc": "2.0", "id": bad, "method": method}))
    elif kind == "notification":
        params = draw(json_values)
        traffic.lines.append(dumps({"jsonrpc": "2.0", "method": method, "params": params}))
    elif kind == "update":
        traffic.lines.append(
            dumps({"jsonrpc": "2.0", "method": "session/update", "params": draw(update_params())})
        )
    elif kind == "answer_unknown":
        answer_id = draw(unknown_ids | invalid_ids)
        body = draw(
            st.sampled_from(
                [{"result": None}, {"result": {"x": 1}}, {"error": {"code": 1, "message": "m"}}]
            )
        )
        traffic.lines.append(dumps({"jsonrpc": "2.0", "id": answer_id, **body}))
    elif kind == "truncated_request":  # cut after its id: answered -32700 with that id
        request_id = draw(unknown_ids)
        whole = dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"a": 1}})
        head = dumps({"jsonrpc": "2.0", "id": request_id})[:-1]
        cut = draw(st.integers(min_value=len(head) + 1, max_value=len(whole) - 1))
        traffic.lines.append(whole[:cut])
        traffic.owe(request_id)
    elif kind == "non_utf8_request":
        request_id = draw(st.integers(min_value=0, max_value=2**40))
        traffic.lines.append(
            b'{"jsonrpc":"2.0","id":%d,"method":"fs/read_text_file","params":{"path":"\xff\xfe"}}'
            % request_id
        )
        traffic.owe(request_id)
    elif kind == "too_deep_request":
        request_id = draw(st.integers(min_value=0, max_value=2**40))
        depth = draw(st.integers(min_value=1100, max_value=3000))
        traffic.lines.append(
            b'{"jsonrpc":"2.0","id":%d,"method":"m","params":{"d":' % request_id
            + b"[" * depth
            + b"]" * depth
            + b"}}"
        )
        traffic.owe(request_id)
    elif kind == "garbage":  # never starts an object: log noise, no answer
        noise = draw(st.binary(min_size=1, max_size=200))
        traffic.lines.append(b"# " + noise.replace(b"\n", b" ").replace(b"\r", b" "))
    else:
        traffic.lines.append(dumps(draw(json_scalars | st.lists(json_scalars, max_size=3))))


@st.composite
def traffic(draw: st.DrawFn, max_lines: int = 12) -> Traffic:
    """Traffic, with the agent steps that write it in random chunks and CR/LF mixes."""
    drawn = Traffic()
    for _ in range(draw(st.integers(min_value=1, max_value=max_lines))):
        draw(lines(drawn))
    data = b"".join(line + draw(st.sampled_from([b"\n", b"\r\n"])) for line in drawn.lines)
    cuts = sorted(draw(st.sets(st.integers(min_value=1, max_value=len(data) - 1), max_size=6)))
    chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    drawn.steps = [write(chunk) for chunk in chunks]
    return drawn
