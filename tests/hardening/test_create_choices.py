"""Create with a config id or a mode the agent does not offer: 422 (a field of the body),
the session not created; PUT /config/{configId} keeps its 404."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.helpers import assert_error, create_session


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"config": {"effort": "high"}}, "config"),  # no such option
        ({"config": {"model": "gpt"}}, "value"),  # no such value
        ({"modeId": "yolo"}, "modeId"),  # no such mode
    ],
)
def test_create_with_what_the_agent_does_not_offer(
    client: TestClient, demo_repo_id: str, body: dict[str, Any], field: str
) -> None:
    total = client.get("/api/sessions").json()["total"]
    error = assert_error(
        client.post("/api/sessions", json={"repoId": demo_repo_id, **body}),
        422,
        "validation_error",
    )
    assert error["details"]["field"] == field, error
    assert client.get("/api/sessions").json()["total"] == total  # not created


def test_create_with_a_mode_when_the_agent_offers_none(make_client: Any) -> None:
    client = make_client({"DEMO_AGENT_MODE": "no-controls"})
    repo = client.get("/api/repos").json()["repos"][0]["id"]
    error = assert_error(
        client.post("/api/sessions", json={"repoId": repo, "modeId": "ask"}),
        422,
        "validation_error",
    )
    assert error["details"]["field"] == "modeId"


def test_put_config_of_an_unknown_option_stays_404(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    assert_error(
        client.put(f"/api/sessions/{session['id']}/config/effort", json={"value": "x"}),
        404,
        "config_option_not_found",
    )
