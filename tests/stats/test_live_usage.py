"""The roll-ups and counters through the real path: a demo-agent run ends, its row
carries the counts /api/stats sums, and /metrics counts its outcome, cost and failed
tools under its agent id."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from server.app import create_app
from tests.helpers import create_session, prompt
from tests.runs.support import demo_repo, finished_run
from tests.test_metrics import change, scrape


def test_a_run_with_a_failing_tool(client: TestClient, demo_repo_id: str) -> None:
    before = scrape(client)
    session = create_session(client, demo_repo_id)
    run = finished_run(client, session["id"], prompt(client, session["id"], "tools 3"))
    after = scrape(client)
    calls = client.get(f"/api/agent-runs/{run['id']}/tool-calls").json()["data"]
    failed = [c for c in calls if c["status"] == "error"]
    assert len(failed) == 1  # call_3: every third fails
    agent = session["agentId"]

    buckets = client.get("/api/stats", params={"groupBy": "agent"}).json()["buckets"]
    assert len(buckets) == 1
    bucket = buckets[0]
    assert bucket["key"] == agent
    assert bucket["runs"] == 1
    assert bucket["byStatus"] == {"completed": 1}
    assert (bucket["toolCalls"], bucket["toolFailures"]) == (len(calls), 1)
    assert bucket["durationMs"]["total"] == run["durationMs"]
    assert bucket["cost"] == [{"currency": "USD", "amount": run["cost"]["amount"]}]

    assert change(before, after, "agent_sessions_runs_total", agent=agent, status="completed") == 1
    assert change(before, after, "agent_sessions_tool_failures_total", agent=agent) == 1
    cost = change(before, after, "agent_sessions_cost_total", agent=agent, currency="USD")
    assert abs(cost - run["cost"]["amount"]) < 1e-9
    tools = client.get("/api/stats/tools").json()["tools"]
    assert sum(t["calls"] for t in tools) == len(calls)
    assert sum(t["failures"] for t in tools) == 1


def test_tokens_from_the_prompt_result(make_settings: Any) -> None:
    command = f"{sys.executable} {Path(__file__).parent.parent / 'runs' / 'script_agent.py'}"
    with TestClient(create_app(make_settings(AGENT_COMMAND=command))) as client:
        before = scrape(client)
        session = create_session(client, demo_repo(client))
        finished_run(client, session["id"], prompt(client, session["id"], "one"))
        finished_run(client, session["id"], prompt(client, session["id"], "two"))
        after = scrape(client)
        (bucket,) = client.get("/api/stats", params={"groupBy": "status"}).json()["buckets"]
    agent = session["agentId"]
    assert bucket["tokens"] == {"input": 300, "output": 30, "cached": 0}
    assert change(before, after, "agent_sessions_tokens_total", agent=agent, kind="input") == 300
    assert change(before, after, "agent_sessions_tokens_total", agent=agent, kind="output") == 30
