"""/api/stats and /api/stats/tools against the hand-computed history of seed.py, on
SQLite and (AGENT_SESSIONS_TEST_PG) PostgreSQL. Percentiles are continuous: p of n
sorted values is v[k] + f (v[k+1] - v[k]) with k + f = p (n - 1)."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from server.settings import Settings
from tests.stats.seed import seed

WHOLE = {"from": "2026-03-01", "to": "2026-03-10"}


@pytest.fixture
def seeded(client: TestClient, settings: Settings, demo_repo_id: str) -> TestClient:
    seed(settings.database_url, demo_repo_id)
    return client


def stats(client: TestClient, path: str = "/api/stats", **params: Any) -> dict[str, Any]:
    response = client.get(path, params={**WHOLE, **params})
    assert response.status_code == 200, response.text
    return dict(response.json())


def by_key(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["key"]: b for b in body["buckets"]}


def test_days_in_utc(seeded: TestClient) -> None:
    body = stats(seeded, groupBy="day")
    assert body["from"] == "2026-03-01T00:00:00.000Z"
    assert body["to"] == "2026-03-10T00:00:00.000Z"
    assert body["tz"] == "UTC"
    assert [b["key"] for b in body["buckets"]] == ["2026-03-01", "2026-03-02", "2026-03-09"]
    first, second, ninth = body["buckets"]
    assert first == {
        "key": "2026-03-01",
        "runs": 2,
        "byStatus": {"completed": 1, "failed": 1},
        "toolCalls": 3,
        "toolFailures": 1,
        "durationMs": {"total": 400, "median": 200.0, "p95": 290.0},
        "tokens": {"input": 300, "output": 30, "cached": 5},
        "cost": [{"currency": "USD", "amount": pytest.approx(0.30)}],
    }
    assert second["runs"] == 3
    assert second["byStatus"] == {"completed": 1, "interrupted": 1, "running": 1}
    assert (second["toolCalls"], second["toolFailures"]) == (1, 1)
    # the running run has no duration yet: 200 and 1000 only
    assert second["durationMs"] == {"total": 1200, "median": 600.0, "p95": 960.0}
    assert second["tokens"] == {"input": 50, "output": 5, "cached": 1}
    assert second["cost"] == [{"currency": "EUR", "amount": 0.5}]
    assert ninth["durationMs"] == {"total": 50, "median": 50.0, "p95": 50.0}
    assert ninth["cost"] == [{"currency": "USD", "amount": 0.01}]


def test_days_in_a_zone_across_its_dst_change(seeded: TestClient) -> None:
    body = stats(seeded, groupBy="day", tz="America/New_York")
    # local midnights: EST (UTC-5) on the 1st, EDT (UTC-4) on the 10th
    assert body["from"] == "2026-03-01T05:00:00.000Z"
    assert body["to"] == "2026-03-10T04:00:00.000Z"
    days = by_key(body)
    assert list(days) == ["2026-03-01", "2026-03-02", "2026-03-09"]
    assert days["2026-03-01"]["runs"] == 3  # R3 at 03:00 UTC is 22:00 on the 1st
    assert days["2026-03-01"]["durationMs"] == {"total": 600, "median": 200.0, "p95": 290.0}
    assert days["2026-03-02"]["runs"] == 2
    assert days["2026-03-02"]["durationMs"] == {"total": 1000, "median": 1000.0, "p95": 1000.0}
    assert days["2026-03-09"]["runs"] == 1  # 00:30 EDT; 23:30 on the 8th in winter time


def test_a_half_hour_zone(seeded: TestClient) -> None:
    body = stats(seeded, groupBy="day", tz="Asia/Kolkata", **{"from": "2026-02-28"})
    # +05:30: R2 at 23:30 UTC is 05:00 on the 2nd
    assert {k: b["runs"] for k, b in by_key(body).items()} == {
        "2026-03-01": 1,
        "2026-03-02": 4,
        "2026-03-09": 1,
    }


def test_by_agent(seeded: TestClient) -> None:
    agents = by_key(stats(seeded, groupBy="agent"))
    assert list(agents) == ["alpha", "beta"]
    alpha, beta = agents["alpha"], agents["beta"]
    assert alpha["runs"] == 3
    assert alpha["durationMs"] == {"total": 400, "median": 200.0, "p95": 290.0}
    assert alpha["tokens"] == {"input": 300, "output": 30, "cached": 5}
    assert (alpha["toolCalls"], alpha["toolFailures"]) == (3, 1)
    assert beta["runs"] == 3
    assert beta["durationMs"] == {"total": 1250, "median": 200.0, "p95": 920.0}
    assert beta["tokens"] == {"input": 60, "output": 6, "cached": 1}
    assert beta["cost"] == [
        {"currency": "EUR", "amount": 0.5},
        {"currency": "USD", "amount": 0.01},
    ]
    assert (beta["toolCalls"], beta["toolFailures"]) == (1, 1)


def test_by_status_and_repo(seeded: TestClient, demo_repo_id: str) -> None:
    statuses = by_key(stats(seeded, groupBy="status"))
    assert {k: b["runs"] for k, b in statuses.items()} == {
        "completed": 3,
        "failed": 1,
        "interrupted": 1,
        "running": 1,
    }
    assert statuses["completed"]["durationMs"] == {"total": 350, "median": 100.0, "p95": 190.0}
    repos = stats(seeded, groupBy="repo")["buckets"]
    assert [(b["key"], b["runs"]) for b in repos] == [(demo_repo_id, 6)]


def test_filters_and_range(seeded: TestClient, demo_repo_id: str) -> None:
    beta = stats(seeded, groupBy="day", agentId="beta")
    assert {k: b["runs"] for k, b in by_key(beta).items()} == {
        "2026-03-02": 2,
        "2026-03-09": 1,
    }
    assert beta["agentId"] == "beta"
    other = stats(seeded, repoId="00000000-0000-4000-8000-000000000000")
    assert other["buckets"] == []
    assert stats(seeded, repoId=demo_repo_id)["repoId"] == demo_repo_id
    # `to` is exclusive, `from` inclusive, to the second
    narrow = stats(seeded, **{"from": "2026-03-01T10:00:00Z", "to": "2026-03-02T03:00:00Z"})
    assert [(b["key"], b["runs"]) for b in narrow["buckets"]] == [("2026-03-01", 2)]


def test_tools(seeded: TestClient) -> None:
    tools = stats(seeded, "/api/stats/tools")["tools"]
    assert tools == [
        {
            "toolName": "read",
            "calls": 3,
            "failures": 1,
            "durationMs": {"median": 20.0, "p95": 38.0},
        },
        {
            "toolName": "write",
            "calls": 1,
            "failures": 1,
            "durationMs": {"median": 30.0, "p95": 30.0},
        },
    ]
    alpha = stats(seeded, "/api/stats/tools", agentId="alpha")["tools"]
    assert alpha[0] == {
        "toolName": "read",
        "calls": 2,
        "failures": 0,
        "durationMs": {"median": 15.0, "p95": 19.5},
    }
    assert [t["toolName"] for t in stats(seeded, "/api/stats/tools", limit=1)["tools"]] == ["read"]


def test_empty_range_and_defaults(client: TestClient) -> None:
    body = client.get("/api/stats").json()
    assert body["groupBy"] == "day"
    assert body["tz"] == "UTC"
    assert body["buckets"] == []
