"""Operations on users, tokens, who am I, and signing in (API.md "Users and access")."""

from __future__ import annotations

from server.sessions import user_shapes
from server.web.openapi.parts import body_schema, json_response, op, path_param, request_body
from server.web.openapi.schemas import Schema, closed, nullable, ref

__all__ = ["USERS", "USER_SCHEMAS"]

USER = path_param("userId", "A user id.")


def _component(shape: type) -> Schema:
    import msgspec

    _, found = msgspec.json.schema_components([shape], ref_template="#/components/schemas/{name}")
    schema: Schema = found[shape.__name__]
    schema.pop("title", None)
    return schema


USER_SCHEMAS: dict[str, Schema] = {
    "User": _component(user_shapes.User),
    "TokenInfo": _component(user_shapes.TokenInfo),
    "Me": _component(user_shapes.Me),
}

NO_CONTENT = {"description": "Done."}

USERS: dict[tuple[str, str], Schema] = {
    ("GET", "/api/me"): op(
        "Who am I",
        {200: json_response("The signed-in user (id and name null for API_TOKEN).", ref("Me"))},
        tag="users",
    ),
    ("POST", "/api/login"): op(
        "Sign a browser in: a token for an HttpOnly, SameSite=Strict cookie",
        {204: {"description": "Signed in; Set-Cookie carries the sign-in."}},
        body=request_body(body_schema(user_shapes.LoginBody)),
        errors=[401, 429],
        token=False,
        tag="users",
    ),
    ("POST", "/api/logout"): op(
        "End this browser's sign-in",
        {204: NO_CONTENT},
        token=False,
        tag="users",
    ),
    ("GET", "/api/users"): op(
        "List users",
        {
            200: json_response(
                "Every user.", closed(["users"], users={"type": "array", "items": ref("User")})
            )
        },
        tag="users",
    ),
    ("POST", "/api/users"): op(
        "Add a user; their first token is in the answer, shown only now",
        {
            201: json_response(
                "The user and their token.",
                closed(["user", "token"], user=ref("User"), token={"type": "string"}),
            )
        },
        body=request_body(body_schema(user_shapes.UserBody)),
        errors=[409],
        tag="users",
    ),
    ("DELETE", "/api/users/{userId}"): op(
        "Remove a user (their sessions stay; their tokens end at once)",
        {204: NO_CONTENT},
        params=[USER],
        tag="users",
    ),
    ("GET", "/api/users/{userId}/tokens"): op(
        "A user's tokens (never their secrets)",
        {
            200: json_response(
                "The tokens.",
                closed(["tokens"], tokens={"type": "array", "items": ref("TokenInfo")}),
            )
        },
        params=[USER],
        tag="users",
    ),
    ("POST", "/api/users/{userId}/tokens"): op(
        "Make a token for a user, shown only now",
        {
            201: json_response(
                "The token.",
                closed(
                    ["id", "token", "name", "expiresAt"],
                    id={"type": "string", "format": "uuid"},
                    token={"type": "string"},
                    name=nullable({"type": "string"}),
                    expiresAt=nullable({"type": "string", "format": "date-time"}),
                ),
            )
        },
        params=[USER],
        body=request_body(body_schema(user_shapes.TokenBody), required=False),
        tag="users",
    ),
    ("DELETE", "/api/tokens/{tokenId}"): op(
        "Revoke a token, at once (its open WebSockets are closed with 4401)",
        {204: NO_CONTENT},
        params=[path_param("tokenId", "A token id.")],
        tag="users",
    ),
}
