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
from server.sessions.history.listing import Listed, SessionPage, SessionQuery
from server.sessions.live.controls_state import empty_controls
from server.sessions.users import shapes as user_shapes
from server.sessions.users.actor import SERVER_ADMIN, Actor, acting, actor_ref, current_actor
from server.sessions.users.revocation import Revocations
from server.sessions.users.secrets import Secret
from server.sessions.users.service import UserError, Users
from server.sessions.workspaces.review import FileRead, LineComment

# The stored records and filters the web renders and passes back: the domain's shapes,
# named here so the web never imports the store.
from store import Repo, Run, SessionRecord, ToolCall
from store.message_row import MessageRow
from store.messages import MessageFilter
from store.models import ApiToken, User
from store.runs import RunFilter
from store.search import MAX_QUERY_CHARS
from store.search import terms as search_terms
from store.sessions import SessionFilter
from store.stats import GroupBy, StatsQuery

__all__ = [
    "MAX_QUERY_CHARS",
    "search_terms",
    "ApiToken",
    "User",
    "DEFAULT_AGENT_ID",
    "SERVER_ADMIN",
    "ActiveRecently",
    "Actor",
    "AgentConfig",
    "AgentStartFailed",
    "Conflict",
    "DomainError",
    "FileRead",
    "Forbidden",
    "Invalid",
    "GroupBy",
    "LimitReached",
    "LineComment",
    "MessageFilter",
    "MessageRow",
    "Listed",
    "NewSession",
    "NotFound",
    "Repo",
    "Run",
    "RunFilter",
    "SessionFilter",
    "Revocations",
    "Secret",
    "SessionNotActive",
    "SessionRecord",
    "SessionPage",
    "SessionQuery",
    "Sessions",
    "StatsQuery",
    "ToolCall",
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
