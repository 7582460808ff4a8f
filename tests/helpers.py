"""Helpers shared by tests: one deadline-bounded wait (``wait_for``, and
``wait_for_async`` inside an event loop), waiting on stored messages, process checks."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx
from starlette.testclient import TestClient

DEMO = f"{sys.executable} -m agent_bridge.demo_agent"


def demo_command(**env: str) -> str:
    """AGENT_COMMAND running the demo agent with DEMO_AGENT_* variables set."""
    prefix = " ".join(f"{k}={v}" for k, v in env.items())
    return f"env {prefix} {DEMO}" if prefix else DEMO


T = TypeVar("T")

POLL = 0.02  # how often a wait looks again; it never decides a test, the deadline does


def _said(what: str | Callable[[], object]) -> object:
    return what() if callable(what) else what


def wait_for(
    check: Callable[[], T | None],
    what: str | Callable[[], object] = "the condition",
    timeout: float = 30,
) -> T:
    """Call ``check`` until it returns something truthy, and return that; fail the test
    with ``what`` (a text, or a callable read only on failure) once ``timeout`` seconds
    passed. For what a test cannot wait on as an event (another process's state, a file,
    a row another task commits)."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{_said(what)}: not within {timeout:g} s")
        time.sleep(POLL)


async def wait_for_async(
    check: Callable[[], Awaitable[T | None]],
    what: str | Callable[[], object] = "the condition",
    timeout: float = 30,
) -> T:
    """``wait_for`` inside an event loop: ``check`` is awaited, the loop keeps running."""
    deadline = time.monotonic() + timeout
    while True:
        found = await check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{_said(what)}: not within {timeout:g} s")
        await anyio.sleep(POLL)


def messages(client: TestClient, session_id: str, **params: Any) -> list[dict[str, Any]]:
    response = client.get(f"/api/sessions/{session_id}/messages", params={"limit": 5000, **params})
    assert response.status_code == 200, response.text
    return list(response.json()["messages"])


def wait_for_message(
    client: TestClient,
    session_id: str,
    predicate: Callable[[dict[str, Any]], bool],
    timeout: float = 30,
) -> dict[str, Any]:
    """Poll the stored log (with a deadline) until a message matches."""

    def matching() -> dict[str, Any] | None:
        return next((m for m in messages(client, session_id) if predicate(m)), None)

    try:
        return wait_for(matching, "a matching message", timeout)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {messages(client, session_id)[-5:]}") from None


def run_ended(run_id: str) -> Callable[[dict[str, Any]], bool]:
    def match(message: dict[str, Any]) -> bool:
        content = message["content"]
        return bool(
            content["type"] == "run"
            and content["runId"] == run_id
            and content["status"] != "running"
        )

    return match


def is_type(kind: str, **fields: Any) -> Callable[[dict[str, Any]], bool]:
    def match(message: dict[str, Any]) -> bool:
        content = message["content"]
        return content["type"] == kind and all(content.get(k) == v for k, v in fields.items())

    return match


def process_state(pid: int) -> str | None:
    """The /proc state letter of ``pid`` (Z for a zombie), or None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def pid_gone(pid: int) -> bool:
    return process_state(pid) is None


def processes_with_env(marker: str) -> list[int]:
    """Pids whose environment contains ``marker`` (e.g. AGENT_SESSIONS_OWNER=...)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def live_agent_pid(client: TestClient, session_id: str) -> int:
    sessions = client.app.state.agent_sessions.sessions  # type: ignore[attr-defined]
    return int(sessions.registry[session_id].client.connection.process.pid)


def create_session(client: TestClient, repo_id: str, **body: Any) -> dict[str, Any]:
    response = client.post("/api/sessions", json={"repoId": repo_id, **body})
    assert response.status_code == 201, response.text
    return dict(response.json())


def prompt(client: TestClient, session_id: str, text: str) -> str:
    response = client.post(f"/api/sessions/{session_id}/prompt", json={"text": text})
    assert response.status_code == 202, response.text
    return str(response.json()["runId"])


def assert_error(response: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    """``status`` with API.md's error body (``code`` if given)."""
    assert response.status_code == status, (response.status_code, response.text[:500])
    assert response.headers["content-type"].startswith("application/json"), response.headers
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert set(error) == {"code", "message", "details"}, error
    assert isinstance(error["message"], str) and error["message"], error
    assert isinstance(error["details"], dict), error
    if code is not None:
        assert error["code"] == code, error
    return dict(error)
