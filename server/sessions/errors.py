"""What the domain refuses, in its own words: no HTTP here.

Each class is one *kind* of refusal; ``code`` is the machine code API.md names and
``details`` the extra facts. The edge (``server.web.errors``) maps every kind to an HTTP
status and a WebSocket error frame in one table, so the domain never knows about either.
"""

from __future__ import annotations

from typing import Any

from agent_bridge.jsontypes import JsonObject

__all__ = [
    "ActiveRecently",
    "AgentStartFailed",
    "Conflict",
    "DomainError",
    "Forbidden",
    "Invalid",
    "LimitReached",
    "NotFound",
    "SessionNotActive",
    "TooLarge",
    "TurnInProgress",
    "SandboxUnavailable",
    "Unavailable",
]


class DomainError(Exception):
    """A refusal with a machine ``code``, a sentence for people and ``details``."""

    code = "error"

    def __init__(self, code: str, message: str, details: JsonObject | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details: JsonObject = details or {}


class NotFound(DomainError):
    """No such thing (``<what>_not_found``); by default the message names its id."""

    def __init__(
        self,
        what: str,
        ident: str,
        message: str | None = None,
        details: JsonObject | None = None,
    ) -> None:
        super().__init__(
            f"{what}_not_found",
            message or f"No {what.replace('_', ' ')} with id {ident}.",
            {"id": ident} if details is None else details,
        )


class Conflict(DomainError):
    """The request is fine but the state forbids it now (not active, turn in progress, …)."""


class SessionNotActive(Conflict):
    """The session is not ``active`` (or is stopping): it takes no such command."""

    def __init__(self, message: str) -> None:
        super().__init__("session_not_active", message)


class TurnInProgress(Conflict):
    """A turn is running, and this needs the session quiet."""

    def __init__(self, message: str = "A turn is running; cancel it first.") -> None:
        super().__init__("turn_in_progress", message)


class ActiveRecently(Conflict):
    """The idle sweep's candidate was used after the sweep began: it is not idle."""

    def __init__(self) -> None:
        super().__init__("session_active_recently", "The session was used since the sweep began.")


class Invalid(DomainError):
    """Well-formed but not acceptable (``validation_error`` unless a code says more)."""

    def __init__(self, message: str, code: str = "validation_error", **details: Any) -> None:
        super().__init__(code, message, details)


class Forbidden(DomainError):
    """A path or a resource outside what the session may touch."""


class TooLarge(DomainError):
    """Over a configured size limit."""

    def __init__(self, what: str, limit: int) -> None:
        super().__init__(
            "payload_too_large", f"The {what} is larger than {limit} bytes.", {"limit": limit}
        )


class LimitReached(DomainError):
    """Too many active sessions; the client should wait (``retry_after`` seconds)."""

    retry_after = 60


class AgentStartFailed(DomainError):
    """The agent did not start: exited, refused ``initialize``/``session/new``, timed out."""


class Unavailable(DomainError):
    """Someone we depend on cannot serve now (shutting down, the owning node is away)."""


class SandboxUnavailable(Unavailable):
    """AGENT_SANDBOX=on and the agent cannot be walled in (API.md "Agent sandbox")."""

    def __init__(self, reason: str) -> None:
        super().__init__(
            "sandbox_unavailable",
            f"AGENT_SANDBOX=on and the agent cannot be sandboxed: {reason}",
            {"reason": reason},
        )
