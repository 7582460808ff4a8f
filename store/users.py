"""Repository functions for users, their tokens and browser sign-ins (API.md "Users and
access"). They never commit: the caller owns the transaction. Secrets never come here,
only their SHA-256 (hex)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from store.models import ApiToken, Login, SessionRecord, User

__all__ = [
    "add_login",
    "add_token",
    "add_user",
    "any_user",
    "count_active_sessions_of",
    "delete_login",
    "delete_token",
    "delete_user",
    "existing",
    "get_token",
    "get_user",
    "get_user_by_name",
    "list_tokens",
    "list_users",
    "login_by_hash",
    "mark_used",
    "token_by_hash",
    "token_ids_of",
]


async def any_user(db: AsyncSession) -> bool:
    """Whether a user exists (then every request needs a credential, also on loopback)."""
    return (await db.execute(select(User.id).limit(1))).first() is not None


async def add_user(db: AsyncSession, user: User) -> None:
    db.add(user)
    await db.flush()


async def get_user(db: AsyncSession, user_id: str) -> User | None:
    return await db.get(User, user_id)


async def get_user_by_name(db: AsyncSession, name: str) -> User | None:
    return (await db.execute(select(User).where(User.name == name))).scalar_one_or_none()


async def list_users(db: AsyncSession) -> Sequence[User]:
    return (await db.execute(select(User).order_by(User.created_at, User.id))).scalars().all()


async def delete_user(db: AsyncSession, user_id: str) -> None:
    """The user, their tokens and sign-ins (explicitly: SQLite's cascade needs the
    foreign-key pragma, which a migration's own connection may lack)."""
    await db.execute(delete(Login).where(Login.user_id == user_id))
    await db.execute(delete(ApiToken).where(ApiToken.user_id == user_id))
    await db.execute(delete(User).where(User.id == user_id))


async def add_token(db: AsyncSession, token: ApiToken) -> None:
    db.add(token)
    await db.flush()


async def get_token(db: AsyncSession, token_id: str) -> ApiToken | None:
    return await db.get(ApiToken, token_id)


async def list_tokens(db: AsyncSession, user_id: str) -> Sequence[ApiToken]:
    query = (
        select(ApiToken)
        .where(ApiToken.user_id == user_id)
        .order_by(ApiToken.created_at, ApiToken.id)
    )
    return (await db.execute(query)).scalars().all()


async def token_ids_of(db: AsyncSession, user_id: str) -> list[str]:
    rows = await db.execute(select(ApiToken.id).where(ApiToken.user_id == user_id))
    return [row[0] for row in rows]


async def delete_token(db: AsyncSession, token_id: str) -> None:
    await db.execute(delete(Login).where(Login.token_id == token_id))
    await db.execute(delete(ApiToken).where(ApiToken.id == token_id))


async def token_by_hash(db: AsyncSession, secret_hash: str) -> tuple[ApiToken, User] | None:
    query = (
        select(ApiToken, User)
        .join(User, User.id == ApiToken.user_id)
        .where(ApiToken.secret_hash == secret_hash)
    )
    row = (await db.execute(query)).first()
    return (row[0], row[1]) if row is not None else None


async def mark_used(db: AsyncSession, token_id: str, when: datetime) -> None:
    await db.execute(update(ApiToken).where(ApiToken.id == token_id).values(last_used_at=when))


async def add_login(db: AsyncSession, login: Login) -> None:
    db.add(login)
    await db.flush()


async def login_by_hash(
    db: AsyncSession, secret_hash: str
) -> tuple[Login, User | None, ApiToken | None] | None:
    query = (
        select(Login, User, ApiToken)
        .outerjoin(User, User.id == Login.user_id)
        .outerjoin(ApiToken, ApiToken.id == Login.token_id)
        .where(Login.secret_hash == secret_hash)
    )
    row = (await db.execute(query)).first()
    return (row[0], row[1], row[2]) if row is not None else None


async def delete_login(db: AsyncSession, login_id: str) -> None:
    await db.execute(delete(Login).where(Login.id == login_id))


async def count_active_sessions_of(db: AsyncSession, owner_id: str) -> int:
    query = (
        select(func.count())
        .select_from(SessionRecord)
        .where(SessionRecord.owner_id == owner_id, SessionRecord.status == "active")
    )
    return int((await db.execute(query)).scalar_one())


async def existing(
    db: AsyncSession, users: Sequence[str], tokens: Sequence[str], logins: Sequence[str]
) -> tuple[set[str], set[str], set[str]]:
    """Which of these user, token and sign-in ids are still in the database."""
    found: list[set[str]] = []
    for model, ids in ((User, users), (ApiToken, tokens), (Login, logins)):
        if not ids:
            found.append(set())
            continue
        column = model.__table__.c.id
        rows = await db.execute(select(column).where(column.in_(list(ids))))
        found.append({str(row[0]) for row in rows})
    return found[0], found[1], found[2]
