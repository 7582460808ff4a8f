"""API.md, Errors 400/422: malformed bodies on every operation that takes a JSON body
(from the OpenAPI catalogue): invalid JSON, NaN and infinities, invalid UTF-8, lone
surrogates, a BOM, deep nesting, non-object bodies, wrong content types, integers past
64 bits. Each gets 400 or 422 with the error body; never 500. The ids in the paths are
real (an active session, a finished run), so the body is what gets judged."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from server.web.openapi import CATALOGUE
from tests.conftest import make_git_repo
from tests.helpers import assert_error, create_session, prompt, run_ended, wait_for_message
from tests.security.support import Operation, app_for


def _json_body_operations() -> list[tuple[str, str, dict[str, Any]]]:
    found = []
    for (method, path), operation in CATALOGUE.items():
        if path.startswith("/mcp/"):  # the agent's own secret comes first (401), then JSON-RPC
            continue
        body = operation.get("requestBody")
        if body is not None and "application/json" in body["content"]:
            found.append((method, path, body))
    return found


OPERATIONS = _json_body_operations()
NEST = 100_000
CASES: list[tuple[str, str | None, bytes, set[int]]] = [
    # (name, content type, body, statuses allowed)
    ("truncated", "application/json", b'{"text": ', {400}),
    ("trailing_garbage", "application/json", b'{"text": "x"} x', {400}),
    ("single_quotes", "application/json", b"{'text': 'x'}", {400}),
    ("nan", "application/json", b'{"text": NaN, "toSeq": NaN}', {400}),
    ("infinity", "application/json", b'{"text": Infinity}', {400}),
    ("float_overflow", "application/json", b'{"toSeq": 1e400}', {400}),
    ("invalid_utf8", "application/json", b'{"text": "\xff\xfe\xfd"}', {400}),
    ("overlong_utf8", "application/json", b'{"text": "\xc0\xaf"}', {400}),
    ("lone_surrogate", "application/json", b'{"text": "\\ud800"}', {400}),
    ("bom", "application/json", b'\xef\xbb\xbf{"text": "x"}', {400}),
    ("nul_outside_string", "application/json", b'{"text": "x"}\x00', {400}),
    ("deep_array", "application/json", b"[" * NEST + b"]" * NEST, {400}),
    ("deep_object", "application/json", b'{"a":' * NEST + b"1" + b"}" * NEST, {400}),
    (
        "nested_65_in_a_field",
        "application/json",
        b'{"text": ' + b"[" * 65 + b"]" * 65 + b"}",
        {400},
    ),
    ("array", "application/json", b"[]", {422}),
    ("string", "application/json", b'"text"', {422}),
    ("null", "application/json", b"null", {422}),
    ("number", "application/json", b"42", {422}),
    ("text_plain", "text/plain", b'{"text": "x"}', {400}),
    ("form", "application/x-www-form-urlencoded", b"text=x", {400}),
    (
        "multipart",
        "multipart/form-data; boundary=b",
        b'--b\r\nContent-Disposition: form-data; name="text"\r\n\r\nx\r\n--b--\r\n',
        {400},
    ),
    ("no_content_type", None, b'{"text": "x"}', {400}),
    ("json_lookalike_type", "application/jsonx", b'{"text": "x"}', {400}),
]
# Every integer field of a body, past what a 64-bit column holds, and below it.
BIG_INTS = [2**64 - 1, 2**63, -(2**63) - 1, 10**30]


@pytest.fixture(scope="module")
def ids(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, dict[str, str]]]:
    tmp = tmp_path_factory.mktemp("malformed")
    make_git_repo(tmp / "workspace" / "demo")
    with TestClient(app_for(tmp, tmp / "workspace")) as client:
        repo_id = client.get("/api/repos").json()["repos"][0]["id"]
        session = create_session(client, repo_id)
        run_id = prompt(client, session["id"], "hello")
        wait_for_message(client, session["id"], run_ended(run_id))
        yield (
            client,
            {
                "sessionId": session["id"],
                "runId": run_id,
                "requestId": str(uuid.uuid4()),
                "repoId": repo_id,
            },
        )
        client.delete(f"/api/sessions/{session['id']}")


def _cases() -> list[Any]:
    params = []
    for method, path, body in OPERATIONS:
        for name, content_type, data, statuses in CASES:
            if not body["required"] and name in ("null",):
                continue
            params.append(
                pytest.param(
                    method, path, content_type, data, statuses, id=f"{method} {path} {name}"
                )
            )
    return params


@pytest.mark.parametrize(("method", "path", "content_type", "data", "statuses"), _cases())
def test_malformed_body(
    ids: tuple[TestClient, dict[str, str]],
    method: str,
    path: str,
    content_type: str | None,
    data: bytes,
    statuses: set[int],
) -> None:
    client, known = ids
    headers = {"Content-Type": content_type} if content_type else {}
    response = client.request(
        method, Operation(method, path).path(**known), content=data, headers=headers
    )
    assert response.status_code in statuses, (response.status_code, response.text[:300])
    assert_error(response, response.status_code)


@pytest.mark.parametrize(
    ("method", "path", "body"), [pytest.param(*op, id=f"{op[0]} {op[1]}") for op in OPERATIONS]
)
def test_integers_past_64_bits(
    ids: tuple[TestClient, dict[str, str]], method: str, path: str, body: dict[str, Any]
) -> None:
    client, known = ids
    schema = body["content"]["application/json"]["schema"]
    fields = [name for name, prop in schema["properties"].items() if "integer" in str(prop)]
    for name in fields:
        for value in BIG_INTS:
            response = client.request(
                method, Operation(method, path).path(**known), json={name: value}
            )
            # 422, or the state's answer where the value is merely clamped (resume's maxSteps
            # on a run that is not paused: 409); never a 500 from a 64-bit column.
            assert response.status_code in (409, 422), (
                name,
                value,
                response.status_code,
                response.text[:300],
            )
            assert_error(response, response.status_code)


def test_the_catalogue_has_json_bodies() -> None:
    assert {(m, p) for m, p, _ in OPERATIONS} >= {
        ("POST", "/api/repos"),
        ("POST", "/api/sessions"),
        ("POST", "/api/sessions/{sessionId}/prompt"),
        ("POST", "/api/sessions/{sessionId}/permissions/{requestId}"),
        ("POST", "/api/agent-runs/{runId}/resume"),
    }
