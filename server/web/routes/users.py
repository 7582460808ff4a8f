"""Users, tokens, who am I, and browsers signing in and out (API.md "Users and access").
Who may call which is ``server.web.access``'s table, applied before these run."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server.sessions import Actor, ApiToken, Secret, User, current_actor, user_shapes
from server.stream.frames import iso
from server.web.access import unauthorized
from server.web.auth import COOKIE, client_address
from server.web.bodies import read_struct
from server.web.errors import ApiError
from server.web.jsonresp import JSONResponse
from server.web.requests import resource, uuid_param
from server.web.state import app_state

__all__ = ["routes", "token_view", "user_view"]


def user_view(user: User) -> dict[str, object]:
    shape = user_shapes.User(
        id=user.id,
        name=user.name,
        role=user.role,  # type: ignore[arg-type] # the store holds the enum's values
        created_at=iso(user.created_at) or "",
    )
    return msgspec.to_builtins(shape)  # type: ignore[no-any-return]


def token_view(token: ApiToken) -> dict[str, object]:
    shape = user_shapes.TokenInfo(
        id=token.id,
        name=token.name,
        created_at=iso(token.created_at) or "",
        expires_at=iso(token.expires_at),
        last_used_at=iso(token.last_used_at),
    )
    return msgspec.to_builtins(shape)  # type: ignore[no-any-return]


def _actor() -> Actor:
    actor = current_actor()
    if actor is None:  # the access table lets no signed-out request reach these
        raise unauthorized()
    return actor


def _expiry(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ApiError.validation(
            "expiresAt must be an ISO 8601 time.", field="expiresAt"
        ) from None
    if when.tzinfo is None:
        raise ApiError.validation("expiresAt needs a time zone (Z).", field="expiresAt")
    return when.astimezone(UTC)


async def me(request: Request) -> Response:
    actor = _actor()
    return JSONResponse({"id": actor.user_id, "name": actor.name, "role": actor.role})


async def list_users(request: Request) -> Response:
    users = await app_state(request).users.list_users()
    return JSONResponse({"users": [user_view(u) for u in users]})


async def add_user(request: Request) -> Response:
    state = app_state(request)
    body = await read_struct(request, user_shapes.UserBody, state.settings.max_body_bytes)
    user, secret = await state.users.add_user(body.name, body.role)
    return JSONResponse({"user": user_view(user), "token": str(secret)}, status_code=201)


async def remove_user(request: Request) -> Response:
    await app_state(request).users.remove_user(uuid_param(request, "user_id"))
    return Response(status_code=204)


async def list_tokens(request: Request) -> Response:
    tokens = await app_state(request).users.tokens(uuid_param(request, "user_id"))
    return JSONResponse({"tokens": [token_view(t) for t in tokens]})


async def make_token(request: Request) -> Response:
    state = app_state(request)
    user_id = uuid_param(request, "user_id")
    body = await read_struct(
        request, user_shapes.TokenBody, state.settings.max_body_bytes, allow_empty=True
    )
    token, secret = await state.users.make_token(user_id, body.name, _expiry(body.expires_at))
    return JSONResponse(
        {
            "id": token.id,
            "token": str(secret),
            "name": token.name,
            "expiresAt": iso(token.expires_at),
        },
        status_code=201,
    )


async def revoke_token(request: Request) -> Response:
    await app_state(request).users.revoke_token(uuid_param(request, "token_id"))
    return Response(status_code=204)


def _cookie(response: Response, request: Request, secret: Secret | None) -> None:
    secure = request.url.scheme in ("https", "wss")
    if secret is None:
        response.delete_cookie(COOKIE, path="/", secure=secure, httponly=True, samesite="strict")
        return
    response.set_cookie(
        COOKIE, str(secret), path="/", secure=secure, httponly=True, samesite="strict"
    )


async def login(request: Request) -> Response:
    """A token for a cookie: the browser's later requests carry the sign-in, never the
    token (HttpOnly: the page's scripts cannot read it either)."""
    state = app_state(request)
    address = client_address(request.scope)
    state.signins.check(address)
    body = await read_struct(request, user_shapes.LoginBody, state.settings.max_body_bytes)
    actor = await state.users.actor_of_token(body.token)
    if actor is None:
        state.signins.failed(address, request.url.path, "login")
        raise unauthorized()
    response = Response(status_code=204)
    _cookie(response, request, await state.users.login(actor))
    return response


async def logout(request: Request) -> Response:
    state = app_state(request)
    cookie = request.cookies.get(COOKIE)
    if cookie:
        await state.users.logout(cookie)
    response = Response(status_code=204)
    _cookie(response, request, None)
    return response


routes = [
    Route("/api/me", me, methods=["GET"]),
    Route("/api/login", login, methods=["POST"]),
    Route("/api/logout", logout, methods=["POST"]),
    resource("/api/users", GET=list_users, POST=add_user),
    resource("/api/users/{user_id}", DELETE=remove_user),
    resource("/api/users/{user_id}/tokens", GET=list_tokens, POST=make_token),
    resource("/api/tokens/{token_id}", DELETE=revoke_token),
]
