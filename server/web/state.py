"""What the app holds for its lifetime, reachable from a request or WebSocket."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec
from starlette.requests import HTTPConnection

if TYPE_CHECKING:
    from server.cluster import Cluster
    from server.sessions import AgentConfig, Sessions, Users
    from server.settings import Settings
    from server.stream.broker import Broker
    from server.stream.writer import Writer
    from server.web.signins import SignIns

__all__ = ["AppState", "app_state"]


class AppState(msgspec.Struct):
    settings: Settings
    writer: Writer
    broker: Broker
    sessions: Sessions
    agents: dict[str, AgentConfig]
    cluster: Cluster
    users: Users
    signins: SignIns


def app_state(conn: HTTPConnection) -> AppState:
    state: AppState = conn.app.state.agent_sessions
    return state
