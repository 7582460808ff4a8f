"""API.md, Errors: every error has the JSON body {"error": {code, message, details}} and
the matching status; 401 carries WWW-Authenticate, 500 carries a requestId and never the
exception text."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from starlette.testclient import TestClient

from server.app import create_app
from server.settings import Settings
from store import repos as repo_store
from tests.helpers import assert_error
from tests.server.test_api_repos import UNKNOWN_ID


@pytest.mark.parametrize(
    "body",
    [
        b"{",  # truncated
        b'{"path": NaN}',  # NaN is not JSON
        b'{"path": "\xff\xfe"}',  # not UTF-8
        b'{"a":' * 80 + b"1" + b"}" * 80,  # nested deeper than anyone needs
        b"",  # empty
    ],
)
def test_malformed_json_is_400(client: TestClient, body: bytes) -> None:
    response = client.post("/api/repos", content=body, headers={"content-type": "application/json"})
    assert_error(response, 400, "invalid_json")


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", None]
)
def test_wrong_content_type_is_400(client: TestClient, content_type: str | None) -> None:
    headers = {"content-type": content_type} if content_type else {}
    response = client.post("/api/repos", content=b'{"path": "demo"}', headers=headers)
    assert_error(response, 400, "invalid_json")


@pytest.mark.parametrize("body", [b"[]", b'"demo"', b"3", b"null", b"[" * 100 + b"]" * 100])
def test_json_that_is_not_an_object_is_422(client: TestClient, body: bytes) -> None:
    response = client.post("/api/repos", content=body, headers={"content-type": "application/json"})
    assert_error(response, 422, "validation_error")


def test_json_with_a_charset_is_fine(client: TestClient) -> None:
    response = client.post(
        "/api/repos",
        content=b'{"path": "demo"}',
        headers={"content-type": "application/json; charset=utf-8"},
    )
    assert_error(response, 409, "repo_already_registered")  # parsed: demo is registered at start


def test_body_over_the_limit_is_413_declared_or_not(make_settings: Callable[..., Settings]) -> None:
    with TestClient(create_app(make_settings(MAX_BODY_BYTES=100))) as c:
        big = b'{"path": "' + b"x" * 200 + b'"}'
        assert_error(
            c.post("/api/repos", content=big, headers={"content-type": "application/json"}),
            413,
            "payload_too_large",
        )

        def chunks() -> Iterator[bytes]:  # no content-length: streamed
            yield big[:50]
            yield big[50:]

        response = c.post(
            "/api/repos", content=chunks(), headers={"content-type": "application/json"}
        )
        assert "content-length" not in response.request.headers
        assert_error(response, 413, "payload_too_large")


def test_every_response_has_a_request_id(client: TestClient) -> None:
    ids = {
        client.get("/api/repos").headers["x-request-id"],
        client.get(f"/api/repos/{UNKNOWN_ID}").headers["x-request-id"],
    }
    assert len(ids) == 2 and all(ids)


def test_unexpected_error_is_500_without_details_of_the_exception(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*_args: object) -> object:
        raise RuntimeError("db password is hunter2")

    with TestClient(create_app(make_settings()), raise_server_exceptions=False) as c:
        monkeypatch.setattr(repo_store, "list_repos", broken)
        response = c.get("/api/repos")
        error = assert_error(response, 500, "internal_error")
        assert (
            "hunter2" not in response.text
            and "Traceback" not in response.text
            and "RuntimeError" not in response.text
        )
        assert error["details"]["requestId"] == response.headers["x-request-id"]


# -- 401 ---------------------------------------------------------------------------------------


@pytest.fixture
def guarded(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings(API_TOKEN="s3cret"))) as c:
        yield c


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "s3cret"},
        {"Authorization": "Basic s3cret"},
        {"Authorization": "Bearer "},
    ],
)
def test_missing_or_wrong_token_is_401(guarded: TestClient, headers: dict[str, str]) -> None:
    for method, path in [
        ("GET", "/api/repos"),
        ("POST", "/api/sessions"),
        ("GET", f"/api/sessions/{UNKNOWN_ID}"),
        ("GET", "/api/agents"),
        ("GET", "/api/nope"),
    ]:
        response = guarded.request(method, path, headers=headers, json={})
        assert_error(response, 401, "unauthorized")
        assert response.headers["www-authenticate"] == "Bearer"


def test_the_token_opens_the_api_and_is_not_taken_from_the_query(guarded: TestClient) -> None:
    assert guarded.get("/api/repos", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert guarded.get("/api/repos", headers={"Authorization": "bearer s3cret"}).status_code == 200
    assert_error(guarded.get("/api/repos?token=s3cret"), 401, "unauthorized")  # only WebSockets may
    # Operations stay open (probes carry no token).
    assert guarded.get("/healthz").json() == {"status": "ok"}
    assert guarded.get("/readyz").status_code == 200
