"""Issue 17, item 9: the forwarding header is trusted only with CLUSTER_SECRET.

``x-agent-sessions-forwarded`` makes a node act on a command itself instead of sending it
to the session's owner. Without ``CLUSTER_SECRET`` on the node, or without the matching
``x-cluster-secret`` on the request, a request carrying it is refused (403
``forwarding_refused``) and logged as a security event, on every route.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from server.cluster import FORWARDED, SECRET, Cluster, OwnerUnreachable
from server.stream.broker import Broker
from store import open_database
from tests.conftest import free_port
from tests.helpers import assert_error
from tests.security.support import UNKNOWN_ID, app_for

COMMANDS = [
    ("POST", f"/api/sessions/{UNKNOWN_ID}/prompt", {"text": "hi"}),
    ("POST", f"/api/sessions/{UNKNOWN_ID}/cancel", None),
    ("DELETE", f"/api/sessions/{UNKNOWN_ID}", None),
    ("GET", "/api/repos", None),
]


def app_client(tmp_path: Path, workspace_root: Path, **env: str) -> TestClient:
    return TestClient(app_for(tmp_path, workspace_root, **env))


@pytest.mark.parametrize(
    ("env", "headers"),
    [
        ({}, {FORWARDED: "node-b"}),  # no secret on this node: never trusted
        ({}, {FORWARDED: "node-b", SECRET: "anything"}),
        ({"CLUSTER_SECRET": "s3cret"}, {FORWARDED: "node-b"}),  # secret missing
        ({"CLUSTER_SECRET": "s3cret"}, {FORWARDED: "node-b", SECRET: "wrong"}),
        ({"CLUSTER_SECRET": "s3cret"}, {FORWARDED: "node-b", SECRET: "s3cre"}),
    ],
    ids=["no-secret", "no-secret-any-proof", "missing-proof", "wrong-proof", "prefix-proof"],
)
def test_an_unproven_forwarding_header_is_refused(
    tmp_path: Path,
    workspace_root: Path,
    env: dict[str, str],
    headers: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    with app_client(tmp_path, workspace_root, **env) as client:
        for method, path, body in COMMANDS:
            with caplog.at_level(logging.WARNING, logger="agent_sessions.security"):
                response = client.request(method, path, json=body, headers=headers)
            assert_error(response, 403, "forwarding_refused")
            assert "s3cret" not in response.text
        events = [r for r in caplog.records if getattr(r, "event", None) == "forwarding_refused"]
        assert len(events) == len(COMMANDS)
        assert all("s3cret" not in r.getMessage() for r in caplog.records)


def test_a_proven_forwarding_header_reaches_the_route(tmp_path: Path, workspace_root: Path) -> None:
    headers = {FORWARDED: "node-b", SECRET: "s3cret"}
    with app_client(tmp_path, workspace_root, CLUSTER_SECRET="s3cret") as client:
        response = client.post(
            f"/api/sessions/{UNKNOWN_ID}/prompt", json={"text": "hi"}, headers=headers
        )
        assert_error(response, 404, "session_not_found")
        assert client.get("/api/repos", headers=headers).status_code == 200


def test_requests_without_the_header_are_unaffected(tmp_path: Path, workspace_root: Path) -> None:
    with app_client(tmp_path, workspace_root) as client:
        assert client.get("/api/repos", headers={SECRET: "whatever"}).status_code == 200
        response = client.post(f"/api/sessions/{UNKNOWN_ID}/prompt", json={"text": "hi"})
        assert_error(response, 404, "session_not_found")


@pytest.mark.parametrize("secret", [None, "s3cret"])
def test_a_node_sends_the_header_only_with_the_secret(
    make_settings: Callable[..., object], tmp_path: Path, secret: str | None
) -> None:
    env = {"CLUSTER_SECRET": secret} if secret else {}
    cluster = Cluster(
        make_settings(**env), open_database(f"sqlite+aiosqlite:///{tmp_path}/n.db"), Broker()
    )  # type: ignore[arg-type]
    sent = cluster.forwarded_headers({"authorization": "Bearer t", "cookie": "c", "x-other": "o"})
    # the credential goes along (a browser's sign-in is its cookie): the owner acts for the
    # same person (API.md "Users and access")
    creds = {"authorization": "Bearer t", "cookie": "c"}
    if secret:
        assert sent == {**creds, FORWARDED: cluster.node_id, SECRET: secret}
    else:
        assert sent == creds


@pytest.mark.anyio
async def test_an_owner_that_does_not_answer_is_owner_unreachable(
    make_settings: Callable[..., object], tmp_path: Path
) -> None:
    """What ForwardingMiddleware answers 503 owner_unavailable for (the transport's own
    errors stay inside the cluster package, which imports httpx only when clustering)."""
    import httpx

    cluster = Cluster(
        make_settings(), open_database(f"sqlite+aiosqlite:///{tmp_path}/n.db"), Broker()
    )  # type: ignore[arg-type]
    cluster._http = httpx.AsyncClient(timeout=5)  # what run() opens on a clustered node
    try:
        with pytest.raises(OwnerUnreachable):
            await cluster.forward(f"http://127.0.0.1:{free_port()}", "POST", "/api/x", "", {}, b"")
    finally:
        await cluster._http.aclose()
