"""API.md "Users and access": every operation of the OpenAPI document, as each role (and
as nobody), on a session of one's own, a team session of someone else and a private
session of someone else, checked against the one access table (server/web/access.py).
Runs on SQLite and, in the PostgreSQL pass, on PostgreSQL (``test_database_url``).

Expected, from the operation's rule: nobody → 401 (open operations excepted); a role
below the rule's → 403 ``forbidden``; someone else's private session (or a run of it) →
404 as if it did not exist; driving someone else's session → 403; otherwise the request
reaches the route (whatever it answers then: 2xx, 404 for an unknown request id, 409,
422 for the missing body, but never 401, 403 or the session's 404).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from server.app import create_app
from server.web.access import COMMANDS, OPERATIONS, rule_for
from server.web.openapi.document import document
from tests.conftest import make_git_repo
from tests.helpers import assert_error, demo_command, run_ended, wait_for_message
from tests.security.support import UNKNOWN_ID, make

ROLES = ("admin", "member", "viewer", "nobody")
TARGETS = ("own", "team", "private")  # whose session a session or run operation is about


@dataclass
class World:
    client: TestClient
    tokens: dict[str, str]  # role -> token (the member owns "own"; "other" owns the rest)
    users: dict[str, str]  # role or "other" -> user id
    sessions: dict[str, str]  # target -> session id
    runs: dict[str, str]  # target -> run id

    def headers(self, role: str) -> dict[str, str]:
        return {} if role == "nobody" else {"Authorization": f"Bearer {self.tokens[role]}"}


def add_user(client: TestClient, name: str, role: str) -> tuple[str, str]:
    state = client.app.state.agent_sessions  # type: ignore[attr-defined]
    user, secret = client.portal.call(state.users.add_user, name, role)  # type: ignore[union-attr]
    return user.id, str(secret)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("roles")
    root = tmp / "workspace"
    make_git_repo(root / "demo")
    settings = make(tmp, root, AGENT_COMMAND=demo_command(), MAX_CONCURRENT_SESSIONS="100")
    with TestClient(create_app(settings)) as client:
        users, tokens = {}, {}
        for role in ("admin", "member", "viewer"):
            users[role], tokens[role] = add_user(client, role, role)
        users["other"], tokens["other"] = add_user(client, "other", "member")
        repo_id = client.get("/api/repos", headers={"Authorization": f"Bearer {tokens['admin']}"})
        repo = repo_id.json()["repos"][0]["id"]
        sessions, runs = {}, {}
        for target, owner, visibility in (
            ("own", "member", "team"),
            ("team", "other", "team"),
            ("private", "other", "private"),
        ):
            auth = {"Authorization": f"Bearer {tokens[owner]}"}
            made = client.post(
                "/api/sessions", json={"repoId": repo, "visibility": visibility}, headers=auth
            )
            assert made.status_code == 201, made.text
            sessions[target] = made.json()["id"]
            ran = client.post(
                f"/api/sessions/{sessions[target]}/prompt", json={"text": "hi"}, headers=auth
            )
            runs[target] = ran.json()["runId"]
        admin = {"Authorization": f"Bearer {tokens['admin']}"}
        client.headers.update(admin)  # the helpers' reads below
        for target in TARGETS:
            wait_for_message(client, sessions[target], run_ended(runs[target]))
        del client.headers["Authorization"]
        yield World(client, tokens, users, sessions, runs)


def openapi_operations() -> list[tuple[str, str]]:
    from tests.security.support import route_app

    doc = document(route_app().routes)
    return sorted((m.upper(), p) for p, item in doc["paths"].items() for m in item)


def route_path(path: str) -> str:
    """The OpenAPI path as the app's route spells it (``{sessionId}`` → ``{session_id}``)."""
    return re.sub(
        r"\{(\w+)\}", lambda m: "{" + re.sub(r"([A-Z])", r"_\1", m[1]).lower() + "}", path
    )


OPS = openapi_operations()


def test_the_table_names_every_operation_and_route_and_nothing_else() -> None:
    from tests.security.support import WS, operations, route_app

    documented = {f"{m} {route_path(p)}" for m, p in OPS}
    served = {
        f"{'GET' if op.method in (WS, 'HEAD') else op.method} {op.template}"
        for op in operations(route_app())
    }
    assert served - set(OPERATIONS) == set(), "routes without a rule"
    assert set(OPERATIONS) - served == set(), "rules of routes that do not exist"
    assert documented - set(OPERATIONS) == set()
    for command, key in COMMANDS.items():  # every WebSocket command has its REST twin's rule
        assert key in OPERATIONS or command == "client_tool_result", command


def expected(world: World, method: str, path: str, role: str, target: str) -> str:
    rule = rule_for(method, route_path(path))
    assert rule is not None, (method, path)
    if path.startswith("/mcp/"):  # only the secret made for the agent opens it, no person's
        return "agent"
    if rule.scope == "open":
        return "open"
    if role == "nobody":
        return "401"
    order = {"viewer": 0, "member": 1, "admin": 2}
    if order[role] < order[rule.role]:
        return "403"
    if rule.scope in ("session", "run") and role != "admin":
        if target == "private":
            return "404"
        if rule.drive and target != "own":
            return "403"
    if rule.scope == "token" and role != "admin":
        return "403"  # the token is someone else's (see fill)
    return "pass"  # "self": the path names the actor's own user (see fill)


def fill(world: World, method: str, path: str, role: str, target: str) -> str:
    """Ids for the path: the target's session and run; one's own user (a removal: a new
    user made for it); a new token of someone else's (a revocation)."""
    state = world.client.app.state.agent_sessions  # type: ignore[attr-defined]
    portal = world.client.portal
    assert portal is not None
    user_id = world.users.get(role, UNKNOWN_ID)
    if method == "DELETE" and "{userId}" in path:
        user_id = portal.call(state.users.add_user, f"gone-{len(world.users)}", "viewer")[0].id
        world.users[f"gone-{len(world.users)}"] = user_id
    token_id = UNKNOWN_ID
    if "{tokenId}" in path:
        token_id = portal.call(state.users.make_token, world.users["other"], None, None)[0].id
    values = {
        "sessionId": world.sessions[target],
        "runId": world.runs[target],
        "userId": user_id,
        "tokenId": token_id,
    }
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m[1], UNKNOWN_ID), path)


def cases() -> Iterator[Any]:
    for method, path in OPS:
        scoped = "{sessionId}" in path or "{runId}" in path
        for role in ROLES:
            for target in TARGETS if scoped else ("own",):
                yield pytest.param(
                    method, path, role, target, id=f"{method} {path} {role} {target}"
                )


@pytest.mark.parametrize(("method", "path", "role", "target"), list(cases()))
def test_every_operation_as_every_role(
    world: World, method: str, path: str, role: str, target: str
) -> None:
    client = world.client
    client.app.state.agent_sessions.signins.forget()  # type: ignore[attr-defined]
    want = expected(world, method, path, role, target)
    url = fill(world, method, path, role, target)
    if path.startswith("/ws/"):
        code = ws_outcome(client, url, world.headers(role))
        assert code == {"401": 4401, "403": 4403, "404": 4404}.get(want, "hello"), want
        return
    response = client.request(method, url, headers=world.headers(role))
    status = response.status_code
    if want == "agent":
        assert_error(response, 401, "unauthorized")
    elif want in ("401", "403"):
        assert_error(response, int(want), "unauthorized" if want == "401" else "forbidden")
    elif want == "404":
        what = "run" if path.startswith("/api/agent-runs") else "session"
        assert_error(response, 404, f"{what}_not_found")
    else:
        assert status not in (401, 403), (want, response.text[:300])
        if status == 404 and ("{sessionId}" in path or "{runId}" in path):
            code = response.json()["error"]["code"]
            # a queued run that is not (or no longer) queued is the route's own 404
            hidden = (
                ("session_not_found",)
                if "/queue/" in path
                else ("session_not_found", "run_not_found")
            )
            assert code not in hidden, response.text


def ws_outcome(client: TestClient, url: str, headers: dict[str, str]) -> int | str:
    with client.websocket_connect(url, headers=headers) as ws:
        try:
            frame = ws.receive_json()
        except WebSocketDisconnect as exc:
            return exc.code
        return str(frame["type"])


@pytest.mark.parametrize(
    ("role", "target", "allowed"),
    [
        ("member", "own", True),
        ("member", "team", False),
        ("viewer", "own", False),
        ("admin", "team", True),
    ],
)
def test_websocket_commands_follow_the_same_table(
    world: World, role: str, target: str, allowed: bool
) -> None:
    """A command on the stream is checked as its REST twin: a viewer reads the stream but
    gets ``forbidden`` for driving it; a member drives only its own session."""
    url = f"/ws/sessions/{world.sessions[target]}?after=0"
    with world.client.websocket_connect(url, headers=world.headers(role)) as ws:
        while ws.receive_json()["type"] != "live":
            pass
        ws.send_json({"type": "set_mode", "modeId": "no-such-mode", "id": "c1"})
        reply = ws.receive_json()
        while reply["type"] == "message":
            reply = ws.receive_json()
    assert reply["ref"] == "c1"
    if allowed:
        assert reply.get("error", {}).get("code") != "forbidden", reply
    else:
        assert reply["type"] == "error" and reply["error"]["code"] == "forbidden", reply


def test_lists_hold_only_what_the_reader_may_see(world: World) -> None:
    client = world.client

    def ids(role: str, **params: str) -> set[str]:
        page = client.get("/api/sessions", params=params, headers=world.headers(role))
        assert page.status_code == 200, page.text
        return {s["id"] for s in page.json()["sessions"]}

    everything = set(world.sessions.values())
    assert ids("admin") >= everything
    assert world.sessions["private"] not in ids("member") | ids("viewer")
    # (the matrix's forks made more sessions, each its forker's)
    mine = client.get("/api/sessions", params={"owner": "me"}, headers=world.headers("member"))
    assert world.sessions["own"] in {s["id"] for s in mine.json()["sessions"]}
    assert {s["owner"]["id"] for s in mine.json()["sessions"]} == {world.users["member"]}
    assert {world.sessions["team"], world.sessions["private"]} <= ids(
        "admin", owner=world.users["other"]
    )
    of_other = ids("member", owner=world.users["other"])
    assert world.sessions["team"] in of_other and world.sessions["private"] not in of_other
    bad = client.get("/api/sessions", params={"owner": "x"}, headers=world.headers("admin"))
    assert_error(bad, 422, "validation_error")
    shown = client.get(f"/api/sessions/{world.sessions['own']}", headers=world.headers("viewer"))
    body = shown.json()
    assert body["owner"] == {"id": world.users["member"], "name": "member"}
    assert body["visibility"] == "team"
    user_message = next(m for m in body["messages"] if m["role"] == "user")
    assert user_message["content"]["by"] == {"id": world.users["member"], "name": "member"}
    run = client.get(f"/api/agent-runs/{world.runs['own']}", headers=world.headers("viewer"))
    assert run.json()["userId"] == world.users["member"]


def test_tokens_of_someone_else_are_for_admins(world: World) -> None:
    other = world.users["other"]
    for method in ("GET", "POST"):
        response = world.client.request(
            method, f"/api/users/{other}/tokens", headers=world.headers("member")
        )
        assert_error(response, 403, "forbidden")
    made = world.client.post(
        f"/api/users/{world.users['member']}/tokens", json={}, headers=world.headers("member")
    )
    assert made.status_code == 201, made.text
    assert made.json()["token"].startswith("as_")


def test_the_table_says_what_api_md_says() -> None:
    """Viewers only read; changing anything needs a member; users and repositories are
    the admins'; what changes a session is its owner's."""
    for key, rule in OPERATIONS.items():
        method, path = key.split(" ", 1)
        if rule.scope == "open":
            assert path in ("/healthz", "/readyz", "/openapi.json", "/", "/{name}") or path in (
                "/api/login",
                "/api/logout",
                "/mcp/sessions/{session_id}",  # the agent's own secret, checked by the endpoint
            ), key
        elif method == "GET":
            assert rule.role == "viewer" or path.startswith("/api/users"), key
        elif rule.scope not in ("self", "token"):
            assert rule.role in ("member", "admin"), key
        if path.startswith(("/api/repos", "/api/users")) and method in ("POST", "DELETE"):
            assert rule.role == "admin" or "/tokens" in path, key
        if path.startswith("/api/sessions/{session_id}") and method != "GET":
            assert rule.drive, key


def test_the_runs_list_leaves_out_someone_elses_private_runs(world: World) -> None:
    def ids(role: str) -> set[str]:
        page = world.client.get("/api/agent-runs?limit=200", headers=world.headers(role))
        assert page.status_code == 200, page.text
        return {r["id"] for r in page.json()["data"]}

    assert world.runs["private"] in ids("admin")
    for role in ("member", "viewer"):
        assert world.runs["private"] not in ids(role)
        assert world.runs["team"] in ids(role) and world.runs["own"] in ids(role)
