"""The users' operations: add, list and remove users, make and revoke tokens, sign
browsers in and out, and find the actor behind a secret. Secrets are made here, returned
once, and stored only as their SHA-256."""

from __future__ import annotations

import hmac
import logging
import time
import uuid
from collections.abc import Sequence
from datetime import datetime

import anyio

from server.sessions.errors import Conflict, Invalid, NotFound
from server.sessions.users.actor import ROLES, Actor
from server.sessions.users.revocation import Revocations
from server.sessions.users.secrets import PREFIX, Secret, hash_secret, new_secret, same_hash
from server.settings import Settings
from store import Database, utcnow
from store import users as user_store
from store.models import ApiToken, Login, User

__all__ = ["API_TOKEN_KEY", "UserError", "Users", "check_role"]

log = logging.getLogger("agent_sessions.security")

REMOVED_SWEEP_SECONDS = 0.5  # a removal by the CLI closes its sockets within a second
API_TOKEN_KEY = "api_token"  # noqa: S105 - the revocation key of API_TOKEN's actor
USED_EVERY = 60.0  # seconds between two writes of a token's lastUsedAt
NAME_MAX = 255


class UserError(Invalid):
    """A user's or token's field is not acceptable (422)."""


def check_role(role: str) -> str:
    if role not in ROLES:
        raise UserError(f"role must be one of {', '.join(ROLES)}.", field="role")
    return role


def _check_name(name: str, field: str = "name") -> str:
    name = name.strip()
    if not name or len(name) > NAME_MAX:
        raise UserError(f"{field} must be 1 to {NAME_MAX} characters.", field=field)
    return name


def user_actor(user: User, keys: tuple[str, ...], expires_at: datetime | None = None) -> Actor:
    return Actor(
        role=user.role,
        user_id=user.id,
        name=user.name,
        keys=(*keys, f"user:{user.id}"),
        expires_at=expires_at.timestamp() if expires_at is not None else None,
    )


class Users:
    def __init__(self, db: Database, settings: Settings, revocations: Revocations) -> None:
        self.db = db
        self.settings = settings
        self.revocations = revocations
        self._used: dict[str, float] = {}

    async def sweep_removed(self, interval: float = REMOVED_SWEEP_SECONDS) -> None:
        """For ever: close (4401) the connections whose user, token or sign-in left the
        database another way than through this server, which closes them at once (the
        CLI's ``users remove`` on the same database; a revocation whose cluster notice
        was lost). One query of the ids watched, when any are."""
        while True:
            await anyio.sleep(interval)
            try:
                gone = await self.removed(self.revocations.watched())
            except Exception:
                log.exception("reading which credentials were removed failed")
                continue
            if gone:
                log.info(
                    "credentials removed elsewhere",
                    extra={"event": "revoked", "keys": len(gone)},
                )
                self.revocations.revoked_here(gone)

    async def removed(self, keys: Sequence[str]) -> list[str]:
        """The ``user:``, ``token:`` and ``login:`` keys whose row is gone."""
        ids: dict[str, list[str]] = {"user": [], "token": [], "login": []}
        for key in keys:
            kind, _, value = key.partition(":")
            if kind in ids and value:
                ids[kind].append(value)
        if not any(ids.values()):
            return []
        async with self.db.read() as db:
            found = await user_store.existing(db, ids["user"], ids["token"], ids["login"])
        return [
            f"{kind}:{value}"
            for (kind, values), present in zip(ids.items(), found, strict=True)
            for value in values
            if value not in present
        ]

    # -- users -------------------------------------------------------------------------

    async def any_user(self) -> bool:
        async with self.db.read() as db:
            return await user_store.any_user(db)

    async def add_user(self, name: str, role: str) -> tuple[User, Secret]:
        """A new user and their first token (its secret, shown once)."""
        name, role = _check_name(name), check_role(role)
        user = User(id=str(uuid.uuid4()), name=name, role=role, created_at=utcnow())
        secret = new_secret()
        async with self.db.write() as db, db.begin():
            if await user_store.get_user_by_name(db, name) is not None:
                raise Conflict("user_exists", f"A user named {name!r} exists.", {"name": name})
            await user_store.add_user(db, user)
            await user_store.add_token(db, self._token_row(user.id, "initial", None, secret))
        log.info("user added", extra={"event": "user_added", "user": name, "role": role})
        return user, secret

    async def list_users(self) -> Sequence[User]:
        async with self.db.read() as db:
            return await user_store.list_users(db)

    async def get_user(self, user_id: str) -> User:
        async with self.db.read() as db:
            user = await user_store.get_user(db, user_id)
        if user is None:
            raise NotFound("user", user_id)
        return user

    async def user_by_name(self, name: str) -> User:
        async with self.db.read() as db:
            user = await user_store.get_user_by_name(db, name)
        if user is None:
            raise NotFound("user", name, f"No user named {name!r}.", {"name": name})
        return user

    async def remove_user(self, user_id: str) -> None:
        """The user, their tokens and sign-ins; their sessions stay (API.md)."""
        async with self.db.write() as db, db.begin():
            user = await user_store.get_user(db, user_id)
            if user is None:
                raise NotFound("user", user_id)
            await user_store.delete_user(db, user_id)
        log.info("user removed", extra={"event": "user_removed", "user": user.name})
        await self.revocations.revoke([f"user:{user_id}"])

    # -- tokens ------------------------------------------------------------------------

    def _token_row(
        self, user_id: str, name: str | None, expires_at: datetime | None, secret: Secret
    ) -> ApiToken:
        return ApiToken(
            id=str(uuid.uuid4()),
            user_id=user_id,
            name=name,
            secret_hash=hash_secret(secret),
            created_at=utcnow(),
            expires_at=expires_at,
        )

    async def make_token(
        self, user_id: str, name: str | None, expires_at: datetime | None
    ) -> tuple[ApiToken, Secret]:
        if name is not None:
            name = _check_name(name)
        if expires_at is not None and expires_at <= utcnow():
            raise UserError("expiresAt is in the past.", field="expiresAt")
        secret = new_secret()
        row = self._token_row(user_id, name, expires_at, secret)
        async with self.db.write() as db, db.begin():
            if await user_store.get_user(db, user_id) is None:
                raise NotFound("user", user_id)
            await user_store.add_token(db, row)
        log.info("token made", extra={"event": "token_made", "token_id": row.id})
        return row, secret

    async def tokens(self, user_id: str) -> Sequence[ApiToken]:
        async with self.db.read() as db:
            if await user_store.get_user(db, user_id) is None:
                raise NotFound("user", user_id)
            return await user_store.list_tokens(db, user_id)

    async def get_token(self, token_id: str) -> ApiToken:
        async with self.db.read() as db:
            token = await user_store.get_token(db, token_id)
        if token is None:
            raise NotFound("token", token_id)
        return token

    async def revoke_token(self, token_id: str) -> None:
        """Gone from the database (its sign-ins with it), then its open connections closed."""
        async with self.db.write() as db, db.begin():
            if await user_store.get_token(db, token_id) is None:
                raise NotFound("token", token_id)
            await user_store.delete_token(db, token_id)
        log.info("token revoked", extra={"event": "token_revoked", "token_id": token_id})
        await self.revocations.revoke([f"token:{token_id}"])

    # -- finding the actor -------------------------------------------------------------

    def api_token_actor(self, given: str) -> Actor | None:
        expected = self.settings.api_token
        if not expected:
            return None
        same = hmac.compare_digest(
            hash_secret(given).encode(), hash_secret(expected).encode()
        )  # hashes of both sides: neither content nor length shows in the timing
        return Actor(role="admin", keys=(API_TOKEN_KEY,)) if same else None

    async def actor_of_token(self, given: str) -> Actor | None:
        """The actor a bearer secret stands for: API_TOKEN's admin, or a user's live token.
        Read from the database on every request: a revoked or expired token fails at once."""
        actor = self.api_token_actor(given)
        if actor is not None or not given.startswith(PREFIX):
            return actor
        digest = hash_secret(given)
        async with self.db.read() as db:
            found = await user_store.token_by_hash(db, digest)
        if found is None:
            return None
        token, user = found
        if not same_hash(token.secret_hash, digest):
            return None
        if token.expires_at is not None and token.expires_at <= utcnow():
            return None
        await self._note_use(token.id)
        return user_actor(user, (f"token:{token.id}",), token.expires_at)

    async def _note_use(self, token_id: str) -> None:
        now = time.monotonic()
        if now - self._used.get(token_id, -USED_EVERY) < USED_EVERY:
            return
        self._used[token_id] = now
        async with self.db.write() as db, db.begin():
            await user_store.mark_used(db, token_id, utcnow())

    # -- browser sign-ins --------------------------------------------------------------

    async def login(self, actor: Actor) -> Secret:
        """A sign-in for ``actor`` (found by its token): the cookie's secret."""
        token_id = next((k.split(":", 1)[1] for k in actor.keys if k.startswith("token:")), None)
        secret = new_secret()
        row = Login(
            id=str(uuid.uuid4()),
            secret_hash=hash_secret(secret),
            user_id=actor.user_id,
            token_id=token_id,
            created_at=utcnow(),
        )
        async with self.db.write() as db, db.begin():
            await user_store.add_login(db, row)
        return secret

    async def actor_of_login(self, cookie: str) -> Actor | None:
        digest = hash_secret(cookie)
        async with self.db.read() as db:
            found = await user_store.login_by_hash(db, digest)
        if found is None:
            return None
        login, user, token = found
        if not same_hash(login.secret_hash, digest):
            return None
        if user is None:  # signed in with API_TOKEN: valid while one is configured
            if not self.settings.api_token:
                return None
            return Actor(role="admin", keys=(f"login:{login.id}", API_TOKEN_KEY))
        expires = token.expires_at if token is not None else None
        if expires is not None and expires <= utcnow():
            return None
        keys = (f"login:{login.id}",) + ((f"token:{token.id}",) if token is not None else ())
        return user_actor(user, keys, expires)

    async def logout(self, cookie: str) -> None:
        digest = hash_secret(cookie)
        async with self.db.write() as db, db.begin():
            found = await user_store.login_by_hash(db, digest)
            if found is None:
                return
            await user_store.delete_login(db, found[0].id)
        await self.revocations.revoke([f"login:{found[0].id}"])

    # -- a signing-in proxy ------------------------------------------------------------

    async def actor_of_proxy(self, name: str) -> Actor | None:
        """The user the proxy names; a new member when AUTH_PROXY_CREATE_USERS allows."""
        async with self.db.read() as db:
            user = await user_store.get_user_by_name(db, name)
        if user is None and self.settings.auth_proxy_create_users:
            try:
                user, _secret = await self.add_user(name, "member")
            except Conflict:  # made by a concurrent request
                async with self.db.read() as db:
                    user = await user_store.get_user_by_name(db, name)
        return user_actor(user, ()) if user is not None else None
