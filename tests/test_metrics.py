"""``/metrics``: Prometheus text that prometheus_client's own parser reads, with every
metric the operations section promises, each moving when it should.

The registry is process-wide, so counters, histograms and the gauges kept by inc/dec
(agent processes, turns running) are compared as changes across an action; the gauges
set from this app's own state (active sessions, viewers) are compared as values.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from server import metrics
from server.app import create_app
from server.settings import Settings
from tests.helpers import (
    create_session,
    is_type,
    messages,
    prompt,
    run_ended,
    wait_for,
    wait_for_message,
)

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

FAMILIES = {
    "agent_sessions_active": "gauge",
    "agent_sessions_agent_processes": "gauge",
    "agent_sessions_turns_running": "gauge",
    "agent_sessions_websocket_viewers": "gauge",
    "agent_sessions_messages_stored": "counter",
    "agent_sessions_store_commit_seconds": "histogram",
    "agent_sessions_store_batch_rows": "histogram",
    "agent_sessions_agent_start_seconds": "histogram",
    "agent_sessions_permission_wait_seconds": "histogram",
    "agent_sessions_admission_refused": "counter",
    "agent_sessions_runs": "counter",
    "agent_sessions_tokens": "counter",
    "agent_sessions_cost": "counter",
    "agent_sessions_tool_failures": "counter",
}


def scrape(client: TestClient) -> Samples:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def change(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def test_exposition_has_every_metric_with_its_type(client: TestClient) -> None:
    response = client.get("/metrics")
    assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    families = {f.name: f.type for f in text_string_to_metric_families(response.text)}
    assert {name: families.get(name) for name in FAMILIES} == FAMILIES


def test_a_turn_with_a_permission_moves_every_turn_metric(
    client: TestClient, demo_repo_id: str
) -> None:
    before = scrape(client)
    session = create_session(client, demo_repo_id)
    created = scrape(client)
    assert value(created, "agent_sessions_active") == 1
    assert change(before, created, "agent_sessions_agent_processes") == 1
    assert change(before, created, "agent_sessions_agent_start_seconds_count") == 1
    assert change(before, created, "agent_sessions_agent_start_seconds_sum") > 0

    run_id = prompt(client, session["id"], "write notes.txt hi")
    asked = wait_for_message(client, session["id"], is_type("permission", outcome=None))["content"]
    waiting = scrape(client)  # the turn waits on a person: it is running, deterministically
    assert change(before, waiting, "agent_sessions_turns_running") == 1
    assert change(before, waiting, "agent_sessions_permission_wait_seconds_count") == 0

    url = f"/api/sessions/{session['id']}/permissions/{asked['requestId']}"
    assert client.post(url, json={"optionId": "allow"}).status_code == 200
    wait_for_message(client, session["id"], run_ended(run_id))
    after = scrape(client)
    assert change(before, after, "agent_sessions_turns_running") == 0
    assert change(before, after, "agent_sessions_permission_wait_seconds_count") == 1
    assert change(before, after, "agent_sessions_permission_wait_seconds_sum") > 0

    stored = messages(client, session["id"])
    by_type = Counter(m["content"]["type"] for m in stored)
    assert {"text", "tool", "permission", "run", "status"} <= set(by_type)
    for kind, count in by_type.items():
        assert change(before, after, "agent_sessions_messages_stored_total", type=kind) == count, (
            kind
        )
    assert change(before, after, "agent_sessions_store_batch_rows_sum") == len(stored)
    commits = change(before, after, "agent_sessions_store_commit_seconds_count")
    assert 1 <= commits == change(before, after, "agent_sessions_store_batch_rows_count")
    assert change(before, after, "agent_sessions_store_commit_seconds_sum") > 0
    assert change(before, after, "agent_sessions_store_commit_seconds_bucket", le="+Inf") == commits

    assert client.delete(f"/api/sessions/{session['id']}").status_code == 200
    ended = scrape(client)
    assert value(ended, "agent_sessions_active") == 0
    assert change(before, ended, "agent_sessions_agent_processes") == 0


def test_refused_create_counts_a_429(make_settings: Callable[..., Settings]) -> None:
    with TestClient(create_app(make_settings(MAX_CONCURRENT_SESSIONS="1"))) as client:
        repo_id = next(
            r["id"] for r in client.get("/api/repos").json()["repos"] if r["name"] == "demo"
        )
        before = scrape(client)
        first = create_session(client, repo_id)
        refused = client.post("/api/sessions", json={"repoId": repo_id})
        assert refused.status_code == 429
        after = scrape(client)
        assert change(before, after, "agent_sessions_admission_refused_total") == 1
        assert value(after, "agent_sessions_active") == 1
        assert client.post(f"/api/sessions/{first['id']}/complete").status_code == 200
        assert value(scrape(client), "agent_sessions_active") == 0
        create_session(client, repo_id)  # the slot is free again; nothing more refused
        assert change(before, scrape(client), "agent_sessions_admission_refused_total") == 1


def test_viewers_gauge_follows_websockets(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)

    def viewers() -> float:
        return value(scrape(client), "agent_sessions_websocket_viewers")

    assert viewers() == 0
    with (
        client.websocket_connect(f"/ws/sessions/{session['id']}") as first,
        client.websocket_connect(f"/ws/sessions/{session['id']}") as second,
    ):
        for ws in (first, second):
            frame: dict[str, Any] = {}
            while frame.get("type") != "live":
                frame = ws.receive_json()
        assert viewers() == 2
    wait_for(lambda: viewers() == 0, "no viewer left", 10)


def test_active_sessions_gauge_is_right_after_a_restart(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    with TestClient(create_app(settings)) as client:
        repo_id = next(
            r["id"] for r in client.get("/api/repos").json()["repos"] if r["name"] == "demo"
        )
        create_session(client, repo_id)
    metrics.ACTIVE_SESSIONS.set(0)  # what a new process starts with
    with TestClient(create_app(settings)) as client:
        assert client.get("/api/sessions", params={"status": "active"}).json()["total"] == 1
        assert value(scrape(client), "agent_sessions_active") == 1
