"""Users, their tokens and sign-ins, and who is acting now (API.md "Users and access").

The web edge finds the actor of each request (``server.web.auth``) and decides what they
may do (``server.web.access``); this package holds the domain side: making and checking
secrets, the users' store operations, the actor of the current request, and the
revocation of open connections. The web sees it only as ``server.sessions`` re-exports
it; admission and the live session's members read the acting user here."""

from server.sessions.users.actor import ROLES, Actor, acting, actor_ref, current_actor
from server.sessions.users.revocation import Revocations
from server.sessions.users.secrets import Secret, hash_secret, new_secret
from server.sessions.users.service import UserError, Users

__all__ = [
    "ROLES",
    "Actor",
    "Revocations",
    "Secret",
    "UserError",
    "Users",
    "acting",
    "actor_ref",
    "current_actor",
    "hash_secret",
    "new_secret",
]
