"""/api/stats adds up whatever the runs hold: sums past 2^63-1 stay exact (SQLite's SUM
raised, a 500), negative counts stored before counts were checked make no negative
total, and a running turn's finished tool call counts in its bucket."""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy.engine import make_url
from starlette.testclient import TestClient

from server.settings import Settings
from store import stats_fast

NOW = datetime.now(UTC)


def _insert_run(path: str, repo_id: str, status: str, **columns: Any) -> str:
    run_id = str(uuid.uuid4())
    session_id = str(uuid.uuid4())
    stamp = (NOW - timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S.%f")
    with sqlite3.connect(path) as db:
        db.execute(
            "INSERT INTO sessions (id, repo_id, agent_id, status, title, created_at, "
            "updated_at, last_activity_at, last_seq, metadata, needs_context) "
            "VALUES (?, ?, 'default', 'completed', 't', ?, ?, ?, 0, '{}', 0)",
            (session_id, repo_id, stamp, stamp, stamp),
        )
        names = "".join(f", {name}" for name in columns)
        marks = ", ?" * len(columns)
        head = "INSERT INTO runs (id, session_id, repo_id, agent_id, status, step_count, "
        sql = f"{head}max_steps, created_at{names}) VALUES (?, ?, ?, 'default', ?, 0, 50, ?{marks})"  # noqa: S608, E501 - the test's own column names
        db.execute(sql, (run_id, session_id, repo_id, status, stamp, *columns.values()))
    return run_id


@pytest.fixture
def db_path(settings: Settings) -> str:
    path = make_url(settings.database_url).database
    assert path is not None
    return path


def _stats(client: TestClient, group_by: str) -> list[dict[str, Any]]:
    response = client.get("/api/stats", params={"groupBy": group_by})
    assert response.status_code == 200, response.text
    return list(response.json()["buckets"])


@pytest.mark.parametrize("group_by", ["day", "status", "agent"])
def test_sums_past_bigint_stay_exact(
    client: TestClient, demo_repo_id: str, db_path: str, group_by: str
) -> None:
    for _ in range(2):
        _insert_run(db_path, demo_repo_id, "completed", input_tokens=5 * 10**18, output_tokens=7)
    (bucket,) = _stats(client, group_by)
    assert bucket["tokens"] == {"input": 10**19, "output": 14, "cached": 0}


def test_no_negative_total(client: TestClient, demo_repo_id: str, db_path: str) -> None:
    _insert_run(db_path, demo_repo_id, "completed", input_tokens=-500, output_tokens=3)
    (bucket,) = _stats(client, "status")
    assert bucket["tokens"] == {"input": 0, "output": 3, "cached": 0}


def test_a_running_turns_finished_tool_call_counts(
    client: TestClient, demo_repo_id: str, db_path: str
) -> None:
    run_id = _insert_run(db_path, demo_repo_id, "running")
    stamp = (NOW - timedelta(minutes=30)).strftime("%Y-%m-%d %H:%M:%S.%f")
    with sqlite3.connect(db_path) as db:
        session_id = db.execute("SELECT session_id FROM runs WHERE id = ?", (run_id,)).fetchone()
        for status in ("completed", "error"):
            db.execute(
                "INSERT INTO tool_calls (id, run_id, session_id, tool_call_id, step_number, "
                "status, created_at) VALUES (?, ?, ?, ?, 1, ?, ?)",
                (str(uuid.uuid4()), run_id, session_id[0], str(uuid.uuid4()), status, stamp),
            )
    (bucket,) = _stats(client, "status")
    assert bucket["key"] == "running"
    assert (bucket["toolCalls"], bucket["toolFailures"]) == (2, 1)
    tools = client.get("/api/stats/tools").json()["tools"]
    assert sum(t["calls"] for t in tools) == 2


def test_roll_up_sums_past_bigint_stay_exact(
    client: TestClient, demo_repo_id: str, db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the roll-up (the path of large ranges): SQLite's upsert turned the overflowing
    sum into a REAL, which the cast back to BIGINT clamped silently."""
    monkeypatch.setattr(stats_fast, "EXACT_LIMIT", 0)
    for _ in range(3):
        _insert_run(db_path, demo_repo_id, "completed", input_tokens=4 * 10**18 + 1)
    (bucket,) = _stats(client, "day")
    assert bucket["tokens"]["input"] == 12 * 10**18 + 3
