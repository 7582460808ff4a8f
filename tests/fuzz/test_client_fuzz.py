"""Issue 17: a hostile client, fuzzed (hypothesis), against a real server (uvicorn).

REST: every operation of the server's own ``/openapi.json`` gets arbitrary path parameters
(real ids, unknown ids, any text), query strings, and bodies (any JSON, objects with the
operation's property names and any values, bytes that are not JSON, wrong content types).
WebSocket: a live session's stream gets arbitrary frames (text, binary, invalid JSON,
unknown and malformed commands, frames over ``MAX_WS_MESSAGE_BYTES``).

Properties: never a 5xx; every 4xx is JSON with API.md's error body; every command frame
gets exactly one ``ack`` or ``error`` answer of API.md's shape; a frame over the limit
closes with 1009 and nothing else closes the stream; the server is alive afterwards.

Fixed seed (``derandomize``) and a bounded budget; ``FUZZ_EXAMPLES=N`` goes deeper.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.conftest import LiveServer, make_git_repo, settings_env, start_server

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0"))
WS_LIMIT = 4096  # MAX_WS_MESSAGE_BYTES of the fuzzed server: huge frames are cheap
FUZZ = settings(
    derandomize=True,  # a fixed seed: the same examples on every run
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
UNKNOWN_ID = "00000000-0000-4000-8000-000000000000"
PARAM = re.compile(r"\{([^}]+)\}")

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=20,
)
ODD_TEXT = st.one_of(
    st.text(max_size=60),
    st.sampled_from(
        ["", " ", "..", "../..", "%00", "\x00", "a" * 5000, "/".join("a" * 3000), "-1", "1e999"]
    ),
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("fuzz")
    workspace = tmp / "workspace"
    make_git_repo(workspace / "demo")
    env = settings_env(
        tmp,
        workspace,
        MAX_WS_MESSAGE_BYTES=WS_LIMIT,
        MAX_CONCURRENT_SESSIONS=50,
        AGENT_STOP_GRACE="0.2",
    )
    live = start_server(env, tmp / "server.log")
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture(scope="module")
def http(server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def ids(http: httpx.Client) -> dict[str, str]:
    """Real ids to put in paths, so the fuzz reaches past the 404s."""
    repo = http.get("/api/repos").json()["repos"][0]["id"]
    session = http.post("/api/sessions", json={"repoId": repo})
    assert session.status_code == 201, session.text
    sid = session.json()["id"]
    run = http.post(f"/api/sessions/{sid}/prompt", json={"text": "hello"})
    assert run.status_code == 202, run.text
    return {"repo_id": repo, "session_id": sid, "run_id": run.json()["runId"]}


def operations(http: httpx.Client) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path template, operation) for every operation of /openapi.json."""
    document = http.get("/openapi.json").json()
    found = [
        (method.upper(), path, op)
        for path, item in document["paths"].items()
        for method, op in item.items()
        if method in ("get", "post", "put", "patch", "delete")
    ]
    assert len(found) >= 15, found
    return found


def body_keys(op: dict[str, Any]) -> list[str]:
    content = op.get("requestBody", {}).get("content", {})
    schema = next(iter(content.values()), {}).get("schema", {})
    return sorted(schema.get("properties", {}))


def query_keys(op: dict[str, Any]) -> list[str]:
    return [p["name"] for p in op.get("parameters", []) if p.get("in") == "query"]


def assert_error_body(response: httpx.Response, what: str) -> None:
    assert response.headers.get("content-type", "").startswith("application/json"), what
    body = response.json()
    assert set(body) == {"error"}, (what, body)
    error = body["error"]
    assert set(error) == {"code", "message", "details"}, (what, error)
    assert isinstance(error["code"], str) and re.fullmatch(r"[a-z_]+", error["code"]), what
    assert isinstance(error["message"], str) and error["message"], what
    assert isinstance(error["details"], dict), what


@st.composite
def requests(
    draw: st.DrawFn, ops: list[tuple[str, str, dict[str, Any]]], ids: dict[str, str]
) -> tuple[str, str, dict[str, Any]]:
    method, template, op = draw(st.sampled_from(ops))

    def fill(match: re.Match[str]) -> str:
        name = match[1]
        value = draw(
            st.one_of(
                st.just(ids.get(name, UNKNOWN_ID)),
                st.just(UNKNOWN_ID),
                ODD_TEXT.filter(bool),
            )
        )
        return quote(value, safe="")

    path = PARAM.sub(fill, template)
    if draw(st.integers(0, 9)) == 0:  # now and then a path no route has
        path = path.rstrip("/") + "/" + quote(draw(ODD_TEXT), safe="/")
    keys = query_keys(op)
    query = draw(
        st.dictionaries(
            st.sampled_from(keys) | st.text(max_size=8) if keys else st.text(max_size=8),
            ODD_TEXT | st.integers(-5, 10**6).map(str),
            max_size=4,
        )
    )
    props = body_keys(op)
    body_kind = draw(st.sampled_from(["object", "json", "bytes", "none", "form"]))
    kwargs: dict[str, Any] = {}
    if body_kind == "object":
        names = st.sampled_from(props) if props else st.text(max_size=8)
        obj = draw(st.dictionaries(names, JSON | ODD_TEXT, max_size=5))
        kwargs = {"content": json.dumps(obj), "headers": {"content-type": "application/json"}}
    elif body_kind == "json":
        kwargs = {
            "content": json.dumps(draw(JSON)),
            "headers": {"content-type": "application/json"},
        }
    elif body_kind == "bytes":
        ctype = draw(
            st.sampled_from(
                [
                    "application/json",
                    "application/x-ndjson",
                    "text/plain",
                    "application/octet-stream",
                    "x/y; a=b",
                ]
            )
        )
        kwargs = {"content": draw(st.binary(max_size=300)), "headers": {"content-type": ctype}}
    elif body_kind == "form":
        kwargs = {"data": {"path": "demo", "text": "x"}}
    url = path + ("?" + urlencode(query) if query else "")
    return method, url, kwargs


def test_rest_fuzz_never_500_and_always_the_error_body(
    server: LiveServer, http: httpx.Client, ids: dict[str, str]
) -> None:
    ops = operations(http)
    seen: dict[int, int] = {}

    @settings(FUZZ, max_examples=EXAMPLES or 150)
    @given(requests(ops, ids))
    def check(request: tuple[str, str, dict[str, Any]]) -> None:
        method, url, kwargs = request
        response = http.request(method, url, **kwargs)
        what = f"{method} {url[:200]} -> {response.status_code} {response.text[:300]}"
        seen[response.status_code] = seen.get(response.status_code, 0) + 1
        assert response.status_code < 500, what
        if response.status_code >= 400:
            assert_error_body(response, what)

    check()
    assert http.get("/readyz").status_code == 200  # alive
    assert server.process.poll() is None
    assert any(400 <= s < 500 for s in seen) and any(s < 300 for s in seen), seen


# -- the WebSocket -------------------------------------------------------------------------

COMMAND_TYPES = ["prompt", "cancel", "permission", "set_mode", "set_config", "elicitation"]
COMMANDS = st.fixed_dictionaries(
    {"type": st.sampled_from(COMMAND_TYPES) | st.text(max_size=10) | JSON},
    optional={
        "id": JSON,
        "text": JSON | st.text(max_size=50),
        "requestId": JSON,
        "optionId": JSON,
        "content": JSON,
        "modeId": JSON,
    },
)
# (kind, payload): what a frame carries; "huge" frames are over the server's limit.
FRAMES = st.one_of(
    st.tuples(st.just("text"), st.text(max_size=200)),
    st.tuples(st.just("text"), COMMANDS.map(json.dumps)),
    st.tuples(st.just("text"), JSON.map(json.dumps)),
    st.tuples(
        st.just("text"),
        st.sampled_from(
            [
                "{",
                "[1,",
                '{"type":',
                "null",
                "NaN",
                '"\\ud800"',
                '{"type":"prompt","text":"\\udc00"}',
            ]
        ),
    ),
    st.tuples(st.just("binary"), st.binary(max_size=200)),
    st.tuples(st.just("binary"), COMMANDS.map(lambda c: json.dumps(c).encode())),
    st.tuples(st.just("huge"), st.sampled_from(["text", "binary"])),
)


class Viewer:
    """One WebSocket on the session; reopened (after ``lastSeq``) when the server closes it."""

    def __init__(self, server: LiveServer, session_id: str) -> None:
        self.url = f"{server.ws_url}/ws/sessions/{session_id}"
        self.ws: ClientConnection | None = None
        self.stack = ExitStack()

    def open(self) -> ClientConnection:
        if self.ws is None:
            self.ws = self.stack.enter_context(connect(self.url, max_size=None, open_timeout=30))
            while json.loads(self.ws.recv(timeout=30))["type"] != "live":
                pass
        return self.ws

    def close(self) -> None:
        self.stack.close()
        self.ws = None

    def reply(self) -> dict[str, Any]:
        """The next ack or error frame (stored messages stream by in between)."""
        assert self.ws is not None
        while True:
            frame = json.loads(self.ws.recv(timeout=30))
            if frame["type"] in ("ack", "error"):
                return dict(frame)
            assert frame["type"] == "message", frame


def assert_reply_shape(reply: dict[str, Any], ref: Any, what: str) -> None:
    assert reply["ref"] == ref, what
    if reply["type"] == "ack":
        return
    assert set(reply) == {"type", "ref", "error"}, what
    error = reply["error"]
    assert set(error) == {"code", "message"}, what
    assert isinstance(error["code"], str) and re.fullmatch(r"[a-z_]+", error["code"]), what
    assert isinstance(error["message"], str) and error["message"], what


def test_websocket_fuzz_answers_every_frame(
    server: LiveServer, http: httpx.Client, ids: dict[str, str]
) -> None:
    session = http.post("/api/sessions", json={"repoId": ids["repo_id"]})
    assert session.status_code == 201, session.text
    viewer = Viewer(server, session.json()["id"])
    counts = {"ack": 0, "error": 0, "1009": 0}

    @settings(FUZZ, max_examples=EXAMPLES or 120)
    @given(st.lists(FRAMES, min_size=1, max_size=4))
    def check(frames: list[tuple[str, Any]]) -> None:
        for kind, payload in frames:
            ws = viewer.open()
            what = f"{kind} {str(payload)[:200]!r}"
            if kind == "huge":
                data = "x" * (WS_LIMIT + 1)
                ws.send(data if payload == "text" else data.encode())
                with pytest.raises(ConnectionClosed) as closed:
                    viewer.reply()
                assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009, what
                counts["1009"] += 1
                viewer.close()
                continue
            ws.send(payload)
            reply = viewer.reply()
            ref = _ref(payload)
            assert_reply_shape(reply, ref, what)
            counts[reply["type"]] += 1

    try:
        check()
    finally:
        viewer.close()
    assert counts["error"] > 0 and counts["1009"] > 0, counts
    assert http.get("/readyz").status_code == 200
    assert server.process.poll() is None


@pytest.mark.parametrize("kind", [[], {}, ["prompt"], {"a": 1}, 7, None])
def test_a_command_type_that_is_not_a_string_is_a_validation_error(
    server: LiveServer, ids: dict[str, str], kind: Any
) -> None:
    """Found by the fuzz: a list or an object as ``type`` crashed the stream
    (``unhashable type``, the connection reset without a close frame)."""
    viewer = Viewer(server, ids["session_id"])
    try:
        viewer.open().send(json.dumps({"type": kind, "id": "r1"}))
        reply = viewer.reply()
        assert reply["type"] == "error" and reply["error"]["code"] == "validation_error", reply
        assert_reply_shape(reply, "r1", str(kind))
        viewer.open().send(json.dumps({"type": "cancel", "id": "r2"}))  # the stream goes on
        assert viewer.reply()["ref"] == "r2"
    finally:
        viewer.close()


def _ref(payload: str | bytes) -> Any:
    """The ``id`` the server should echo: that of a frame that is a JSON object (binary
    frames are read as UTF-8, bad bytes replaced), else null."""
    text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value.get("id") if isinstance(value, dict) else None


def test_the_fuzzed_server_logged_no_unhandled_error(server: LiveServer, tmp_path: Path) -> None:
    """Whatever the fuzz sent, nothing reached the 500 handler or crashed a task."""
    log = server.log()
    assert "unhandled error" not in log and "Traceback" not in log, log[-5000:]
