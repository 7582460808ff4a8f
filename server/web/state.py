"""What the app holds for its lifetime, reachable from a request or WebSocket."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.requests import HTTPConnection

if TYPE_CHECKING:
    from server.cluster import Cluster
    from server.sessions import AgentConfig, Sessions
    from server.settings import Settings
    from server.stream.broker import Broker
    from server.stream.writer import Writer
    from store import Database

__all__ = ["AppState", "app_state"]


@dataclass
class AppState:
    settings: Settings
    db: Database
    writer: Writer
    broker: Broker
    sessions: Sessions
    agents: dict[str, AgentConfig]
    cluster: Cluster


def app_state(conn: HTTPConnection) -> AppState:
    state: AppState = conn.app.state.agent_sessions
    return state
