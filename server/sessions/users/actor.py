"""Who is acting: set by the web edge for each request and WebSocket command, read where
the domain records who did something (``by`` on a user message, an answer, a commit)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import msgspec

__all__ = ["ROLES", "Actor", "acting", "actor_ref", "current_actor", "signed"]

ROLES = ("admin", "member", "viewer")
_RANK = {"viewer": 0, "member": 1, "admin": 2}


class Actor(msgspec.Struct, frozen=True):
    """The person behind a request. ``user_id`` is None for the server's own admin
    (``API_TOKEN``, or nobody on loopback with no users): there is no user to name.
    ``keys`` name what revokes this actor's open connections (its token, sign-in, user)."""

    role: str
    user_id: str | None = None
    name: str | None = None
    keys: tuple[str, ...] = ()
    expires_at: float | None = None  # epoch seconds, when the token it came with expires

    def at_least(self, role: str) -> bool:
        return _RANK[self.role] >= _RANK[role]

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    def ref(self) -> dict[str, str] | None:
        """``{id, name}`` as API.md's ``by`` / ``owner``, None without a user."""
        if self.user_id is None or self.name is None:
            return None
        return {"id": self.user_id, "name": self.name}


SERVER_ADMIN = Actor(role="admin")
_ACTOR: ContextVar[Actor | None] = ContextVar("agent_sessions_actor", default=None)


def current_actor() -> Actor | None:
    return _ACTOR.get()


def actor_ref() -> dict[str, str] | None:
    """The current actor as ``{id, name}``, None without a user."""
    actor = _ACTOR.get()
    return actor.ref() if actor is not None else None


@contextmanager
def acting(actor: Actor | None) -> Iterator[None]:
    token = _ACTOR.set(actor)
    try:
        yield
    finally:
        _ACTOR.reset(token)


def signed(message: str) -> str:
    """A commit message with a ``Committed-by:`` trailer naming the acting user, so the
    repository's own history says who committed or merged (unchanged without a user)."""
    by = actor_ref()
    if by is None:
        return message
    return f"{message.rstrip()}\n\nCommitted-by: {by['name']} <{by['id']}>"
