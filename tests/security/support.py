"""Helpers for the security tests: the app's routes as (method, path) operations, the
error body check, and a WebSocket close-code probe for the TestClient."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from server.app import create_app
from server.settings import Settings, load_settings
from tests.conftest import settings_env
from tests.helpers import wait_for

UNKNOWN_ID = "00000000-0000-4000-8000-000000000000"
WS = "WEBSOCKET"


@dataclass(frozen=True)
class Operation:
    method: str  # an HTTP method, or WS
    template: str  # the route's path as Starlette spells it, "/" for the UI mount

    def path(self, **ids: str) -> str:
        """The template with every {param} filled (by name if given, else a UUID)."""
        return re.sub(
            r"\{([^}:]+)(?::[^}]*)?\}", lambda m: ids.get(m[1], UNKNOWN_ID), self.template
        )

    def __str__(self) -> str:
        return f"{self.method} {self.template}"


def operations(app: Starlette) -> list[Operation]:
    """Every (method, path) the app serves, from ``app.routes``."""
    found: list[Operation] = []
    for route in app.routes:
        if isinstance(route, Route):
            found.extend(Operation(m, route.path) for m in sorted(route.methods or ()))
        elif isinstance(route, WebSocketRoute):
            found.append(Operation(WS, route.path))
        elif isinstance(route, Mount):
            found.append(Operation("GET", route.path or "/"))
        else:  # pragma: no cover - a new kind of route needs a decision here
            raise AssertionError(f"unknown route type {route!r}")
    return found


def route_app() -> Starlette:
    """The app as configured by default, for its routes only (its lifespan never runs,
    so nothing is created on disk)."""
    env = {
        "AGENT_WORKSPACE_ROOT": "/nonexistent/workspace",
        "DATABASE_URL": "sqlite+aiosqlite:///:memory:",
    }
    return create_app(load_settings(env, env_file=None))


def app_for(tmp_path: Path, workspace_root: Path, **env: Any) -> Starlette:
    return create_app(make(tmp_path, workspace_root, **env))


def make(tmp_path: Path, workspace_root: Path, **env: Any) -> Settings:
    return load_settings(settings_env(tmp_path, workspace_root, **env), env_file=None)


def ws_close_code(
    client: TestClient, path: str, headers: dict[str, str] | None = None
) -> tuple[int, list[Any]]:
    """Open a WebSocket; return (close code, frames received before the close)."""
    frames: list[Any] = []
    with client.websocket_connect(path, headers=dict(headers or {})) as ws:
        try:
            while True:
                frames.append(ws.receive_json())
                if frames[-1].get("type") == "live":
                    ws.close(1000)
                    return 1000, frames
        except WebSocketDisconnect as exc:
            return exc.code, frames


def when(predicate: Callable[[], bool], timeout: float = 15, what: str = "condition") -> None:
    """Poll ``predicate`` (with a deadline) until it holds."""
    wait_for(predicate, what, timeout)
