"""The session domain. The web layer sees only what is named here: the ``Sessions``
facade (one method per thing a client asks), the domain's errors, and the shapes its
methods return. Inside: a ``Registry`` of live sessions, the ``Supervisor`` that owns
their lives, and each ``LiveSession`` with its turns, questions and controls (see
docs/architecture.md). Imports no web framework."""

from server.sessions.agents.config import DEFAULT_AGENT_ID, AgentConfig, load_agents
from server.sessions.errors import (
    ActiveRecently,
    AgentStartFailed,
    Conflict,
    DomainError,
    Forbidden,
    Invalid,
    LimitReached,
    NotFound,
    SessionNotActive,
    TooLarge,
    TurnInProgress,
    Unavailable,
)
from server.sessions.facade import NewSession, Sessions
from server.sessions.history.listing import Listed, SessionPage, SessionQuery
from server.sessions.live.controls_state import empty_controls
from server.sessions.workspaces.review import FileRead, LineComment

__all__ = [
    "DEFAULT_AGENT_ID",
    "ActiveRecently",
    "AgentConfig",
    "AgentStartFailed",
    "Conflict",
    "DomainError",
    "FileRead",
    "Forbidden",
    "Invalid",
    "LimitReached",
    "LineComment",
    "Listed",
    "NewSession",
    "NotFound",
    "SessionNotActive",
    "SessionPage",
    "SessionQuery",
    "Sessions",
    "TooLarge",
    "TurnInProgress",
    "Unavailable",
    "empty_controls",
    "load_agents",
]
