"""The session domain. The web layer sees only what is named here: the ``Sessions``
facade (one method per thing a client asks), the domain's errors, and the shapes its
methods return; beside the facade, the ``Users`` service (users, tokens, sign-ins) and
the acting user of the current request (``users/``). Inside: a ``Registry`` of live
sessions, the ``Supervisor`` that owns their lives, and each ``LiveSession`` with its
turns, questions and controls (see docs/architecture.md). Imports no web framework."""

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
from server.sessions.live.controls_state import empty_controls
from server.sessions.users import shapes as user_shapes
from server.sessions.users.actor import SERVER_ADMIN, Actor, acting, actor_ref, current_actor
from server.sessions.users.revocation import Revocations
from server.sessions.users.secrets import Secret
from server.sessions.users.service import UserError, Users

__all__ = [
    "DEFAULT_AGENT_ID",
    "SERVER_ADMIN",
    "ActiveRecently",
    "Actor",
    "AgentConfig",
    "AgentStartFailed",
    "Conflict",
    "DomainError",
    "Forbidden",
    "Invalid",
    "LimitReached",
    "NewSession",
    "NotFound",
    "Revocations",
    "Secret",
    "SessionNotActive",
    "Sessions",
    "TooLarge",
    "TurnInProgress",
    "Unavailable",
    "UserError",
    "Users",
    "acting",
    "actor_ref",
    "current_actor",
    "empty_controls",
    "load_agents",
    "user_shapes",
]
