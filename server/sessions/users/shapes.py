"""The JSON shapes of users and tokens (API.md "Users and access"), for the routes and
the OpenAPI document alike."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from server.shapes import NonBlank, Owner, Time, Uuid, _Body

__all__ = [
    "LoginBody",
    "Me",
    "NewToken",
    "NewUser",
    "Owner",
    "TokenBody",
    "TokenInfo",
    "User",
    "UserBody",
]

Role = Literal["admin", "member", "viewer"]


class UserBody(_Body):
    name: Annotated[NonBlank, msgspec.Meta(max_length=255)]
    role: Annotated[Role, msgspec.Meta(description="admin, member or viewer.")] = "member"


class TokenBody(_Body):
    name: Annotated[NonBlank, msgspec.Meta(max_length=255)] | None = None
    expires_at: Time | None = None


class LoginBody(_Body):
    token: NonBlank


class User(msgspec.Struct, rename="camel"):
    id: Uuid
    name: str
    role: Role
    created_at: Time


class NewUser(msgspec.Struct, rename="camel"):
    user: User
    token: Annotated[str, msgspec.Meta(description="Shown only now.")]


class NewToken(msgspec.Struct, rename="camel"):
    id: Uuid
    token: Annotated[str, msgspec.Meta(description="Shown only now.")]
    name: str | None
    expires_at: Time | None


class TokenInfo(msgspec.Struct, rename="camel"):
    id: Uuid
    name: str | None
    created_at: Time
    expires_at: Time | None
    last_used_at: Time | None


class Me(msgspec.Struct, rename="camel"):
    id: Uuid | None
    name: str | None
    role: Role
