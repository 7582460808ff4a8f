"""Who may do what: one table keyed by operation (method and route path), read by the
HTTP middleware, the WebSocket handshake and every WebSocket command alike, so a route
has no access rule of its own (API.md "Users and access").

A rule is a least role and a scope:

- ``open``: anyone, signed in or not (probes, the UI's files, the contract, signing in);
- ``any``: any signed-in actor at or above the role;
- ``session``: the ``{session_id}`` of the path, which a non-admin must be able to see
  (a private session of someone else is 404, as if it did not exist); with ``drive``
  they must also own it (403 otherwise);
- ``run``: the same, for the session of the ``{run_id}`` of the path;
- ``self``: ``{user_id}`` is the actor's own user, or the actor is an admin;
- ``token``: the ``{token_id}`` belongs to the actor's user, or the actor is an admin.

Roles: viewer reads; member also creates sessions and drives its own; admin does
everything. Lists (sessions, runs, statistics) filter out what a reader may not see.
"""

from __future__ import annotations

import uuid
from typing import Literal

import msgspec

from server.sessions import Actor, NotFound
from server.web.errors import ApiError
from server.web.state import AppState

__all__ = [
    "COMMANDS",
    "OPERATIONS",
    "Rule",
    "authorize",
    "authorize_command",
    "forbidden",
    "may_see",
    "rule_for",
    "unauthorized",
]

Scope = Literal["open", "any", "session", "run", "self", "token"]


class Rule(msgspec.Struct, frozen=True):
    role: str = "viewer"
    scope: Scope = "any"
    drive: bool = False  # on a session or run: its owner only (and admins)

    def describe(self) -> str:
        """For the OpenAPI document: who may call the operation."""
        if self.scope == "open":
            return "anyone"
        who = {"viewer": "any signed-in user", "member": "members and admins"}.get(
            self.role, "admins"
        )
        if self.scope in ("session", "run"):
            extra = " who own the session" if self.drive else " who may see the session"
            return who + (extra if self.role != "admin" else "")
        if self.scope == "self":
            return "the user themselves, or admins"
        if self.scope == "token":
            return "the token's user, or admins"
        return who


OPEN = Rule(scope="open")
READ = Rule()
MEMBER = Rule(role="member")
ADMIN = Rule(role="admin")
SEE = Rule(scope="session")
DRIVE = Rule(role="member", scope="session", drive=True)
SEE_RUN = Rule(scope="run")
DRIVE_RUN = Rule(role="member", scope="run", drive=True)

S = "/api/sessions/{session_id}"
R = "/api/agent-runs/{run_id}"

# Every route of the app, by "METHOD path" (HEAD is GET). tests/security walks the OpenAPI
# document and the app's routes against this table.
OPERATIONS: dict[str, Rule] = {
    "GET /healthz": OPEN,
    "GET /readyz": OPEN,
    "GET /openapi.json": OPEN,
    "GET /": OPEN,
    "GET /{name}": OPEN,
    "POST /api/login": OPEN,
    "POST /api/logout": OPEN,
    "GET /metrics": READ,
    "GET /api/me": READ,
    "GET /api/agents": READ,
    "GET /api/mcp-servers": READ,
    "GET /api/stats": READ,
    "GET /api/stats/tools": READ,
    # users and tokens
    "GET /api/users": ADMIN,
    "POST /api/users": ADMIN,
    "DELETE /api/users/{user_id}": ADMIN,
    "GET /api/users/{user_id}/tokens": Rule(scope="self"),
    "POST /api/users/{user_id}/tokens": Rule(scope="self"),
    "DELETE /api/tokens/{token_id}": Rule(scope="token"),
    # repositories: reading for all, changing for admins
    "GET /api/repos": READ,
    "POST /api/repos": ADMIN,
    "GET /api/repos/{repo_id}": READ,
    "DELETE /api/repos/{repo_id}": ADMIN,
    # sessions
    "GET /api/sessions": READ,
    "POST /api/sessions": MEMBER,
    "POST /api/sessions/import": MEMBER,
    f"GET {S}": SEE,
    f"DELETE {S}": DRIVE,
    f"POST {S}/prompt": DRIVE,
    f"POST {S}/cancel": DRIVE,
    f"POST {S}/complete": DRIVE,
    f"GET {S}/messages": SEE,
    f"POST {S}/permissions/{{request_id}}": DRIVE,
    f"PATCH {S}": DRIVE,
    f"DELETE {S}/queue/{{run_id}}": DRIVE,
    f"GET {S}/client-tools": SEE,
    f"PUT {S}/client-tools": DRIVE,
    f"POST {S}/client-tools/{{call_id}}": DRIVE,
    f"GET {S}/transcript": SEE,
    f"POST {S}/fork": DRIVE,
    f"POST {S}/rewind": DRIVE,
    f"GET {S}/export": SEE,
    f"GET {S}/attachments/{{sha256}}": SEE,
    f"GET {S}/files": SEE,
    f"GET {S}/controls": SEE,
    f"PUT {S}/mode": DRIVE,
    f"PUT {S}/config/{{config_id}}": DRIVE,
    f"POST {S}/elicitations/{{request_id}}": DRIVE,
    f"GET {S}/changes": SEE,
    f"POST {S}/commit": DRIVE,
    f"POST {S}/merge": DRIVE,
    f"DELETE {S}/worktree": DRIVE,
    f"GET {S}/tree": SEE,
    f"GET {S}/file": SEE,
    f"POST {S}/changes/revert": DRIVE,
    f"POST {S}/review": DRIVE,
    # runs
    "GET /api/agent-runs": READ,
    f"GET {R}": SEE_RUN,
    f"GET {R}/messages": SEE_RUN,
    f"GET {R}/messages/{{message_id}}": SEE_RUN,
    f"GET {R}/tool-calls": SEE_RUN,
    f"GET {R}/tool-calls/{{call_id}}": SEE_RUN,
    f"POST {R}/resume": DRIVE_RUN,
    # the MCP server of client tools: its own secret, made for one agent process (not a
    # person's token), is checked by the endpoint itself
    "POST /mcp/sessions/{session_id}": OPEN,
    "GET /mcp/sessions/{session_id}": OPEN,
    "DELETE /mcp/sessions/{session_id}": OPEN,
    # the stream: reading it; its commands are their REST twins (COMMANDS)
    "GET /ws/sessions/{session_id}": SEE,
}

# Each WebSocket command is the operation of its REST twin.
COMMANDS: dict[str, str] = {
    "prompt": f"POST {S}/prompt",
    "cancel": f"POST {S}/cancel",
    "permission": f"POST {S}/permissions/{{request_id}}",
    "elicitation": f"POST {S}/elicitations/{{request_id}}",
    "set_mode": f"PUT {S}/mode",
    "set_config": f"PUT {S}/config/{{config_id}}",
    "client_tool_result": f"POST {S}/client-tools/{{call_id}}",
}


def rule_for(method: str, path: str) -> Rule | None:
    return OPERATIONS.get(f"{'GET' if method == 'HEAD' else method} {path}")


def unauthorized() -> ApiError:
    return ApiError(
        401,
        "unauthorized",
        "A valid token is required (Authorization: Bearer <token>, or sign in).",
        headers={"WWW-Authenticate": "Bearer"},
    )


def forbidden(message: str) -> ApiError:
    return ApiError(403, "forbidden", message)


def may_see(actor: Actor, owner_id: str | None, visibility: str) -> bool:
    return actor.is_admin or visibility != "private" or owner_id == actor.user_id


def _uuid(value: str) -> str | None:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


async def authorize(
    state: AppState, actor: Actor | None, rule: Rule, params: dict[str, str]
) -> None:
    """Raise the refusal (401, 403, 404) of ``rule`` for ``actor``, else return."""
    if rule.scope == "open":
        return
    if actor is None:
        raise unauthorized()
    if not actor.at_least(rule.role):
        raise forbidden(f"This needs the {rule.role} role; you are a {actor.role}.")
    if rule.scope == "session":
        await _session(state, actor, params.get("session_id", ""), rule.drive, "session")
    elif rule.scope == "run":
        run_id = _uuid(params.get("run_id", ""))
        if run_id is None:
            return  # the route answers a malformed id (422)
        session_id = await state.sessions.runs.session_of(run_id)
        if session_id is not None:
            await _session(state, actor, session_id, rule.drive, "run", run_id)
    elif rule.scope == "self":
        if not actor.is_admin and params.get("user_id") != actor.user_id:
            raise forbidden("Only an admin may manage another user's tokens.")
    elif rule.scope == "token" and not actor.is_admin:
        token_id = _uuid(params.get("token_id", ""))
        if token_id is None:
            return
        try:
            token = await state.users.get_token(token_id)
        except NotFound:
            return  # the route's own 404
        if token.user_id != actor.user_id:
            raise forbidden("Only an admin may revoke another user's token.")


async def _session(
    state: AppState,
    actor: Actor,
    raw_id: str,
    drive: bool,
    what: str,
    ident: str | None = None,
) -> None:
    session_id = _uuid(raw_id)
    if session_id is None or actor.is_admin:
        return  # a malformed id: the route's own answer; an admin sees everything
    record = await state.sessions.listing.record(session_id)
    if record is None:
        return  # the route's own 404
    if not may_see(actor, record.owner_id, record.visibility):
        raise ApiError.not_found(what, ident or raw_id)
    if drive and record.owner_id != actor.user_id:
        raise forbidden("Only the session's owner (or an admin) may do this.")


async def authorize_command(
    state: AppState, actor: Actor | None, kind: str, session_id: str
) -> None:
    """A WebSocket command, checked as its REST twin (an unknown kind: the stream's 422)."""
    key = COMMANDS.get(kind)
    if key is None:
        return
    rule = OPERATIONS.get(key, DRIVE)
    await authorize(state, actor, rule, {"session_id": session_id})
