"""Helpers for the run and tool-call tests: reading runs, walking pages, waiting."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from starlette.testclient import TestClient

from tests.helpers import is_type, messages, run_ended, wait_for_message

__all__ = [
    "Clock",
    "all_pages",
    "demo_repo",
    "finished_run",
    "get_ok",
    "page",
    "permission_message",
    "tool_calls",
]


def demo_repo(client: TestClient) -> str:
    repos = client.get("/api/repos").json()["repos"]
    return str(next(r["id"] for r in repos if r["name"] == "demo"))


def get_ok(client: TestClient, url: str, **params: Any) -> dict[str, Any]:
    response = client.get(url, params=params)
    assert response.status_code == 200, response.text
    return dict(response.json())


def finished_run(client: TestClient, session_id: str, run_id: str) -> dict[str, Any]:
    """Wait for the stored message that ends the run, then return the Run."""
    wait_for_message(client, session_id, run_ended(run_id))
    return get_ok(client, f"/api/agent-runs/{run_id}")


def tool_calls(client: TestClient, run_id: str, **params: Any) -> list[dict[str, Any]]:
    return list(get_ok(client, f"/api/agent-runs/{run_id}/tool-calls", limit=500, **params)["data"])


def page(client: TestClient, url: str, **params: Any) -> tuple[list[dict[str, Any]], str | None]:
    body = get_ok(client, url, **{k: v for k, v in params.items() if v is not None})
    assert set(body) == {"data", "nextCursor"}, body
    return list(body["data"]), body["nextCursor"]


def all_pages(
    client: TestClient,
    url: str,
    limit: int,
    between: Callable[[int], None] | None = None,
    **params: Any,
) -> list[dict[str, Any]]:
    """Every row by following nextCursor; ``between(i)`` runs after page i is read."""
    rows: list[dict[str, Any]] = []
    cursor = None
    for index in range(1000):
        data, cursor = page(client, url, limit=limit, cursor=cursor, **params)
        assert len(data) <= limit
        rows.extend(data)
        if between is not None:
            between(index)
        if cursor is None:
            return rows
        assert data, "a page with a next cursor must not be empty"
    raise AssertionError("pagination did not end")


def permission_message(client: TestClient, session_id: str) -> dict[str, Any]:
    return wait_for_message(client, session_id, is_type("permission", outcome=None))


class Clock:
    """A monotonic clock to inject (``Turn(clock=)``, ``create_app(clock=)``): manual from
    1000.0, or following real time (``follow=True``); ``advance`` jumps it forward, so a
    test makes time pass without waiting for it."""

    def __init__(self, *, follow: bool = False) -> None:
        self.now = 1000.0
        self._base = time.monotonic() if follow else None

    def __call__(self) -> float:
        real = time.monotonic() - self._base if self._base is not None else 0.0
        return self.now + real

    def advance(self, seconds: float) -> None:
        self.now += seconds


def stored(client: TestClient, session_id: str, kind: str) -> list[dict[str, Any]]:
    return [m for m in messages(client, session_id) if m["content"]["type"] == kind]
