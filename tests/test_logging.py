"""Logs: one line per event, JSON with ``LOG_FORMAT=json``, the session and run ids on a
session's lines, and the request id in a request's logs and in its 500 response."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

import store.repos
from server.app import create_app
from server.logs import REQUEST_ID, JsonFormatter, TextFormatter, log_context, setup_logging
from server.settings import Settings
from tests.conftest import LiveServer
from tests.helpers import wait_for

REQUIRED = {"time", "level", "logger", "message"}


@pytest.fixture
def captured() -> Iterator[list[dict[str, Any]]]:
    """Every record of the ``agent_sessions`` loggers, whatever their propagation, as the
    JSON handler writes it (formatted when emitted, like the real handler)."""
    records: list[dict[str, Any]] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(json.loads(JsonFormatter().format(record)))

    handler, logger = Keep(logging.DEBUG), logging.getLogger("agent_sessions")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield records
    logger.removeHandler(handler)
    logger.setLevel(level)


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """setup_logging changes process-wide loggers: put them back afterwards."""
    names = ["", "agent_sessions", "uvicorn", "uvicorn.error", "uvicorn.access"]
    saved = [
        (
            logging.getLogger(n),
            logging.getLogger(n).handlers[:],
            logging.getLogger(n).level,
            logging.getLogger(n).propagate,
        )
        for n in names
    ]
    yield
    for logger, handlers, level, propagate in saved:
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate


def record(message: str, *, exc: bool = False, **extra: Any) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise ValueError("boom\nsecond line")
        except ValueError:
            exc_info = sys.exc_info()
    made = logging.LogRecord(
        "agent_sessions.test", logging.WARNING, __file__, 1, message, None, exc_info
    )
    made.__dict__.update(extra)
    return made


# -- formatters --------------------------------------------------------------------------


def test_json_formatter_one_object_with_ids_and_context() -> None:
    token = REQUEST_ID.set("req-1")
    try:
        with log_context(session_id="s-ctx", run_id="r-1"):
            line = JsonFormatter().format(record("two\nlines", exc=True, session_id="s-1", pid=7))
    finally:
        REQUEST_ID.reset(token)
    assert "\n" not in line
    entry = json.loads(line)
    assert REQUIRED <= set(entry)
    assert (
        entry["time"].endswith("Z")
        and entry["level"] == "warning"
        and entry["logger"] == "agent_sessions.test"
    )
    assert entry["message"] == "two\nlines"
    # the record's own extra wins over the context; the context fills in the rest
    assert (entry["session_id"], entry["run_id"], entry["request_id"], entry["pid"]) == (
        "s-1",
        "r-1",
        "req-1",
        7,
    )
    assert "ValueError: boom" in entry["exception"]


def test_log_context_nests_and_removes() -> None:
    with log_context(session_id="s"), log_context(run_id="r"):
        assert json.loads(JsonFormatter().format(record("x")))["run_id"] == "r"
        with log_context(run_id=None):
            entry = json.loads(JsonFormatter().format(record("x")))
            assert entry["session_id"] == "s" and "run_id" not in entry
    assert "session_id" not in json.loads(JsonFormatter().format(record("x")))


def test_text_formatter_is_one_line_with_ids() -> None:
    line = TextFormatter().format(record("two\nlines", exc=True, session_id="s-1", run_id="r-1"))
    assert "\n" not in line
    assert "agent_sessions.test: two\\nlines" in line
    assert "session_id=s-1" in line and "run_id=r-1" in line and "ValueError: boom" in line


def test_setup_logging_sends_every_logger_through_one_json_handler(
    restore_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    setup_logging("info", "json")
    logging.getLogger("agent_sessions.hub").info("ours", extra={"session_id": "s"})
    logging.getLogger("uvicorn.error").info("uvicorn's")
    logging.getLogger("some.library").warning("a library's")
    lines = capsys.readouterr().err.splitlines()
    entries = [json.loads(line) for line in lines]
    assert [e["message"] for e in entries] == ["ours", "uvicorn's", "a library's"]
    assert entries[0]["session_id"] == "s"


# -- request ids -------------------------------------------------------------------------


def test_a_request_id_is_in_the_response_and_in_the_requests_logs(
    client: TestClient, demo_repo_id: str, captured: list[dict[str, Any]]
) -> None:
    response = client.post("/api/sessions", json={"repoId": demo_repo_id})
    assert response.status_code == 201
    request_id = response.headers["x-request-id"]
    mine = [e for e in captured if e.get("event") == "active_count"]
    assert mine and all(e["request_id"] == request_id for e in mine)
    assert all(e["session_id"] == response.json()["id"] for e in mine)


def test_a_500_carries_the_request_id_of_its_log_record(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, captured: list[dict[str, Any]]
) -> None:
    async def broken(_db: Any) -> None:
        raise RuntimeError("secret detail")

    monkeypatch.setattr(store.repos, "list_repos", broken)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        response = client.get("/api/repos")
    assert response.status_code == 500
    body = response.json()
    assert body["error"]["code"] == "internal_error"
    assert "secret detail" not in response.text
    request_id = body["error"]["details"]["requestId"]
    assert request_id and response.headers["x-request-id"] == request_id
    [logged] = [e for e in captured if e["message"] == "unhandled error"]
    assert logged["request_id"] == request_id and "secret detail" in logged["exception"]


# -- a real server -----------------------------------------------------------------------


def run_one_turn(server: LiveServer) -> tuple[str, str]:
    """Create a session, run one turn to its end, delete it; (session id, run id)."""
    with httpx.Client(base_url=server.url, timeout=30) as http:
        repo_id = next(
            r["id"] for r in http.get("/api/repos").json()["repos"] if r["name"] == "demo"
        )
        session_id = http.post("/api/sessions", json={"repoId": repo_id}).json()["id"]
        run_id = http.post(f"/api/sessions/{session_id}/prompt", json={"text": "hello"}).json()[
            "runId"
        ]
        wait_for(  # polling the stored log of another process
            lambda: any(
                m["content"]["type"] == "run" and m["content"]["status"] != "running"
                for m in http.get(
                    f"/api/sessions/{session_id}/messages", params={"type": "run"}
                ).json()["messages"]
            ),
            "the run did not end",
        )
        assert http.delete(f"/api/sessions/{session_id}").status_code == 200
    return session_id, run_id


@pytest.fixture
def json_server_lines(live_server: Callable[..., LiveServer]) -> tuple[list[str], str, str]:
    server = live_server(LOG_FORMAT="json")
    session_id, run_id = run_one_turn(server)
    assert server.stop() == 0
    return [line for line in server.log().splitlines() if line.strip()], session_id, run_id


def parsed(lines: list[str]) -> list[dict[str, Any]]:
    entries = []
    for line in lines:
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue
    return entries


def test_json_server_logs_are_json_objects_and_carry_the_session(
    json_server_lines: tuple[list[str], str, str],
) -> None:
    lines, session_id, run_id = json_server_lines
    entries = parsed(lines)
    ours = [e for e in entries if str(e.get("logger", "")).startswith("agent_sessions")]
    assert ours and all(REQUIRED <= set(e) for e in entries)
    assert not [
        line for line in lines if '"logger":"agent_sessions' in line and not line.startswith("{")
    ]
    session_events = [
        e for e in ours if e.get("event") == "active_count" or e["message"] == "run ended"
    ]
    assert len(session_events) >= 3  # created, run ended, cancelled
    assert all(e.get("session_id") == session_id for e in session_events)
    [ended] = [e for e in ours if e["message"] == "run ended"]
    assert ended["run_id"] == run_id and ended["status"] == "completed"


def test_every_line_of_a_json_server_is_json(
    json_server_lines: tuple[list[str], str, str],
) -> None:
    lines, _, _ = json_server_lines
    assert [line for line in lines if not line.startswith("{")] == []
    assert all(REQUIRED <= set(e) for e in parsed(lines))


def test_agent_process_lines_carry_the_session(
    json_server_lines: tuple[list[str], str, str],
) -> None:
    lines, session_id, _ = json_server_lines
    agent = [e for e in parsed(lines) if e.get("event") in ("agent_spawned", "agent_exited")]
    assert len(agent) == 2 and all(e.get("session_id") == session_id for e in agent)
