"""API.md "Finding and keeping sessions" through the real app and the demo agent, on
SQLite (and PostgreSQL with AGENT_SESSIONS_TEST_PG): search, titles, activity order and
usage, archive, purge, queued prompts, and every refusal."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from server.web.requests import encode_cursor
from store.search import HIGHLIGHT_END, HIGHLIGHT_START
from tests.helpers import (
    assert_error,
    create_session,
    is_type,
    prompt,
    run_ended,
    wait_for_message,
)


def listed(client: TestClient, **params: Any) -> dict[str, Any]:
    response = client.get("/api/sessions", params=params)
    assert response.status_code == 200, response.text
    return dict(response.json())


def finish(client: TestClient, session_id: str, text: str) -> str:
    run_id = prompt(client, session_id, text)
    wait_for_message(client, session_id, run_ended(run_id))
    return run_id


def ended_session(client: TestClient, repo_id: str, text: str, **body: Any) -> dict[str, Any]:
    session = create_session(client, repo_id, **body)
    finish(client, session["id"], text)
    response = client.post(f"/api/sessions/{session['id']}/complete")
    assert response.status_code == 200, response.text
    return dict(response.json())


# -- search ------------------------------------------------------------------------------


def test_search_finds_prompts_and_agent_messages_best_first(
    client: TestClient, demo_repo_id: str
) -> None:
    one = create_session(client, demo_repo_id)
    finish(client, one["id"], "refactor the frobnicator module")
    two = create_session(client, demo_repo_id)
    finish(client, two["id"], "frobnicator frobnicator frobnicator everywhere")
    other = create_session(client, demo_repo_id)
    finish(client, other["id"], "nothing to see here")

    page = listed(client, q="frobnicator")
    ids = [s["id"] for s in page["sessions"]]
    assert set(ids) == {one["id"], two["id"]} and page["total"] == 2
    assert ids[0] == two["id"]  # more occurrences in a shorter text rank first
    for session in page["sessions"]:
        match = session["match"]
        assert f"{HIGHLIGHT_START}frobnicator{HIGHLIGHT_END}" in match["snippet"].lower()
        message = client.get(f"/api/sessions/{session['id']}").json()["messages"]
        matched = next(m for m in message if m["seq"] == match["seq"])
        assert "frobnicator" in matched["content"]["text"].lower()
    # the demo agent echoes "You said: ...": its whole message is indexed too
    agent_hit = listed(client, q="said frobnicator")
    assert {s["id"] for s in agent_hit["sessions"]} == {one["id"], two["id"]}
    # the last word is a prefix: search while typing
    assert {s["id"] for s in listed(client, q="frobni")["sessions"]} == {one["id"], two["id"]}
    assert "match" not in listed(client)["sessions"][0]


def test_search_leaves_out_streamed_chunks(client: TestClient, demo_repo_id: str) -> None:
    """Only final texts are indexed: one hit per message, never one per chunk."""
    session = create_session(client, demo_repo_id)
    finish(client, session["id"], "zanzibar")
    sid = session["id"]
    db = client.app.state.agent_sessions.sessions.services.db  # type: ignore[attr-defined]
    rows = client.portal.call(_indexed_rows, db, sid)  # type: ignore[union-attr]
    finals = [
        m
        for m in client.get(f"/api/sessions/{sid}/messages").json()["messages"]
        if m["content"]["type"] == "text" and not m["content"].get("partial")
    ]
    partials = [
        m
        for m in client.get(f"/api/sessions/{sid}/messages").json()["messages"]
        if m["content"].get("partial")
    ]
    assert partials, "the demo agent streams chunks"
    assert sorted(rows) == sorted(m["seq"] for m in finals)


async def _indexed_rows(db: Any, session_id: str) -> list[int]:
    from sqlalchemy import text

    async with db.read() as session:
        if session.get_bind().dialect.name == "postgresql":
            query = (
                "SELECT seq FROM messages WHERE session_id = :s AND partial = false "
                "AND type = 'text' AND dropped = false "
                "AND to_tsvector('simple'::regconfig, content ->> 'text') @@ "
                "to_tsquery('simple', 'zanzibar')"
            )
        else:
            query = (
                "SELECT seq FROM messages_fts WHERE session_id = :s "
                "AND messages_fts MATCH 'zanzibar'"
            )
        return [int(r[0]) for r in (await session.execute(text(query), {"s": session_id}))]


@pytest.mark.parametrize(
    "q",
    [
        '"',
        "'",
        "a AND OR NOT",
        "NEAR(a b)",
        "title:x",
        "*",
        "^start",
        "foo-bar",
        "(((",
        "a & b | !c",
        "x:* <-> y",
        "\\",
        "\u00e9t\u00e9",
        "\U0001f600",
        "-",
        "_",
    ],
)
def test_search_syntax_is_never_syntax(client: TestClient, demo_repo_id: str, q: str) -> None:
    response = client.get("/api/sessions", params={"q": q})
    assert response.status_code == 200, response.text


def test_search_refusals(client: TestClient) -> None:
    assert_error(client.get("/api/sessions", params={"q": "x" * 501}), 422, "validation_error")
    cursor = encode_cursor("2026-01-01T00:00:00+00:00", "00000000-0000-4000-8000-000000000000")
    assert_error(
        client.get("/api/sessions", params={"q": "x", "cursor": cursor}), 422, "validation_error"
    )
    assert_error(client.get("/api/sessions", params={"sort": "title"}), 422, "validation_error")
    assert_error(client.get("/api/sessions", params={"archived": "maybe"}), 422)


def test_search_matches_titles_and_leaves_dropped_messages_out(
    client: TestClient, demo_repo_id: str
) -> None:
    titled = create_session(client, demo_repo_id, title="Quokka migration")
    page = listed(client, q="quokka")
    assert [s["id"] for s in page["sessions"]] == [titled["id"]]
    assert page["sessions"][0]["match"] == {
        "seq": None,
        "snippet": f"{HIGHLIGHT_START}Quokka{HIGHLIGHT_END} migration",
    }
    rewound = create_session(client, demo_repo_id)
    finish(client, rewound["id"], "first words")
    finish(client, rewound["id"], "wombat second")
    assert [s["id"] for s in listed(client, q="wombat")["sessions"]] == [rewound["id"]]
    response = client.post(f"/api/sessions/{rewound['id']}/rewind", json={"toSeq": 2})
    assert response.status_code == 200, response.text
    assert listed(client, q="wombat")["sessions"] == []


# -- titles --------------------------------------------------------------------------------


def test_titles_from_prompt_user_and_fork(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    assert session["title"] is None and session["titleSource"] is None
    long = "x" * 100
    finish(client, session["id"], f"\n  {long}\nsecond line")
    shown = client.get(f"/api/sessions/{session['id']}").json()
    assert shown["titleSource"] == "prompt" and len(shown["title"]) == 80
    finish(client, session["id"], "a later prompt keeps the first title")
    assert client.get(f"/api/sessions/{session['id']}").json()["title"] == shown["title"]

    fork = client.post(f"/api/sessions/{session['id']}/fork", json={})
    assert fork.status_code == 201, fork.text
    assert fork.json()["title"] == shown["title"] + " (fork)"

    renamed = client.patch(f"/api/sessions/{session['id']}", json={"title": "Mine"})
    assert renamed.status_code == 200, renamed.text
    assert (renamed.json()["title"], renamed.json()["titleSource"]) == ("Mine", "user")
    assert [s["id"] for s in listed(client, q="mine")["sessions"]] == [session["id"]]
    given = create_session(client, demo_repo_id, title="Given")
    assert given["titleSource"] == "user"


# -- activity order and usage ------------------------------------------------------------


def test_activity_order_run_count_and_usage(client: TestClient, demo_repo_id: str) -> None:
    old = create_session(client, demo_repo_id)
    new = create_session(client, demo_repo_id)
    finish(client, new["id"], "one")
    finish(client, old["id"], "two")
    finish(client, old["id"], "three")
    created = [s["id"] for s in listed(client)["sessions"]]
    assert created[:2] == [new["id"], old["id"]]
    page = listed(client, sort="activity")
    assert [s["id"] for s in page["sessions"]][:2] == [old["id"], new["id"]]
    first = page["sessions"][0]
    assert first["runCount"] == 2
    assert set(first["usage"]) == {"inputTokens", "outputTokens", "costUsd"}
    assert first["usage"]["costUsd"] > 0  # the demo agent reports a cost in USD
    assert first["lastActivityAt"].endswith("Z")
    # the cursor pages in activity order too
    one = listed(client, sort="activity", limit=1)
    two = listed(client, sort="activity", limit=1, cursor=one["nextCursor"])
    assert [one["sessions"][0]["id"], two["sessions"][0]["id"]] == [old["id"], new["id"]]


def test_the_list_reads_usage_in_one_query(client: TestClient, demo_repo_id: str) -> None:
    """No N+1: listing 5 sessions or 1 runs the same number of statements."""
    from sqlalchemy import event

    for _ in range(5):
        finish(client, create_session(client, demo_repo_id)["id"], "hello")
    engine = client.app.state.agent_sessions.sessions.services.db.reader_engine.sync_engine  # type: ignore[attr-defined]
    counted: list[str] = []

    def count(*args: Any) -> None:
        counted.append(str(args[2]))

    event.listen(engine, "before_cursor_execute", count)
    try:
        listed(client, limit=1)
        one = len(counted)
        counted.clear()
        listed(client, limit=5)
        five = len(counted)
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert one == five


# -- archive -------------------------------------------------------------------------------


def test_archive_hides_and_shows(client: TestClient, demo_repo_id: str) -> None:
    active = create_session(client, demo_repo_id)
    assert_error(
        client.patch(f"/api/sessions/{active['id']}", json={"archived": True}),
        409,
        "session_active",
    )
    done = ended_session(client, demo_repo_id, "archive me")
    response = client.patch(f"/api/sessions/{done['id']}", json={"archived": True})
    assert response.status_code == 200 and response.json()["archived"] is True
    assert done["id"] not in {s["id"] for s in listed(client)["sessions"]}
    assert [s["id"] for s in listed(client, archived="true")["sessions"]] == [done["id"]]
    everything = {s["id"] for s in listed(client, archived="all")["sessions"]}
    assert {active["id"], done["id"]} <= everything
    assert listed(client, q="archive")["sessions"] == []
    assert [s["id"] for s in listed(client, q="archive", archived="true")["sessions"]] == [
        done["id"]
    ]
    back = client.patch(f"/api/sessions/{done['id']}", json={"archived": False})
    assert back.json()["archived"] is False


@pytest.mark.parametrize(
    "body",
    [
        {"title": ""},
        {"title": "  "},
        {"title": 3},
        {"title": "x" * 501},
        {"archived": "yes"},
        {"visibility": "all"},
    ],
)
def test_patch_refusals(client: TestClient, demo_repo_id: str, body: dict[str, Any]) -> None:
    session = create_session(client, demo_repo_id)
    assert_error(client.patch(f"/api/sessions/{session['id']}", json=body), 422)


def test_patch_unknown_and_malformed(client: TestClient) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    assert_error(client.patch(f"/api/sessions/{missing}", json={"title": "x"}), 404)
    assert_error(client.patch("/api/sessions/nope", json={"title": "x"}), 422)
    response = client.patch(
        f"/api/sessions/{missing}", content=b"{", headers={"content-type": "application/json"}
    )
    assert_error(response, 400, "invalid_json")


# -- purge ---------------------------------------------------------------------------------


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


def _commit_repo(repo: Path) -> None:
    env = ["-c", "user.name=t", "-c", "user.email=t@t"]
    _git(repo, "add", "-A")
    _git(repo, *env, "commit", "-qm", "init")


@pytest.mark.parametrize("keep_branch", [False, True])
def test_purge_removes_everything(
    client: TestClient, demo_repo_id: str, workspace_root: Path, keep_branch: bool
) -> None:
    repo = workspace_root / "demo"
    _commit_repo(repo)
    session = create_session(client, demo_repo_id, isolation="worktree")
    sid = session["id"]
    run_id = finish(client, sid, "tools 2")
    assert _git(repo, "for-each-ref", f"refs/agent-sessions/{sid}/").strip()
    branch = session["workspace"]["branch"]
    worktree = Path(session["workspace"]["path"])
    assert worktree.is_dir()
    assert_error(client.delete(f"/api/sessions/{sid}?purge=true"), 409, "session_active")
    client.post(f"/api/sessions/{sid}/complete")
    query = "?purge=true&keepBranch=true" if keep_branch else "?purge=true"
    response = client.delete(f"/api/sessions/{sid}{query}")
    assert response.status_code == 204, response.text
    assert_error(client.get(f"/api/sessions/{sid}"), 404, "session_not_found")
    assert_error(client.get(f"/api/agent-runs/{run_id}"), 404, "run_not_found")
    assert client.get("/api/agent-runs", params={"sessionId": sid}).json()["data"] == []
    assert not _git(repo, "for-each-ref", f"refs/agent-sessions/{sid}/").strip()
    assert not worktree.exists()
    has_branch = bool(_git(repo, "branch", "--list", branch).strip())
    assert has_branch is keep_branch
    db = client.app.state.agent_sessions.sessions.services.db  # type: ignore[attr-defined]
    assert client.portal.call(_rows_of, db, sid) == 0  # type: ignore[union-attr]
    assert_error(client.delete(f"/api/sessions/{sid}?purge=true"), 404, "session_not_found")


async def _rows_of(db: Any, session_id: str) -> int:
    from sqlalchemy import text

    total = 0
    async with db.read() as session:
        for table in ("messages", "runs", "tool_calls", "permissions", "attachments"):
            query = text(f"SELECT count(*) FROM {table} WHERE session_id = :s")  # noqa: S608
            total += int((await session.execute(query, {"s": session_id})).scalar_one())
        if session.get_bind().dialect.name == "sqlite":
            query = text("SELECT count(*) FROM messages_fts WHERE session_id = :s")
            total += int((await session.execute(query, {"s": session_id})).scalar_one())
    return total


def test_purge_keeps_what_another_session_uses(client: TestClient, demo_repo_id: str) -> None:
    """A fork's copies and its own attachments stay when its parent is purged."""
    parent = create_session(client, demo_repo_id)
    finish(client, parent["id"], "shared words here")
    fork = client.post(f"/api/sessions/{parent['id']}/fork", json={}).json()
    client.post(f"/api/sessions/{parent['id']}/complete")
    assert client.delete(f"/api/sessions/{parent['id']}?purge=true").status_code == 204
    assert client.get(f"/api/sessions/{fork['id']}").status_code == 200
    assert [s["id"] for s in listed(client, q="shared")["sessions"]] == [fork["id"]]


def test_plain_delete_still_only_cancels(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    response = client.delete(f"/api/sessions/{session['id']}?purge=false")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert_error(client.delete(f"/api/sessions/{session['id']}?purge=maybe"), 422)


# -- queued prompts ------------------------------------------------------------------------


def _run(client: TestClient, run_id: str) -> dict[str, Any]:
    response = client.get(f"/api/agent-runs/{run_id}")
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_queued_prompts_start_in_order(client: TestClient, demo_repo_id: str) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    first = prompt(client, sid, "slow 10")
    queued = []
    for word in ("second", "third"):
        response = client.post(f"/api/sessions/{sid}/prompt", json={"text": word, "queue": True})
        assert response.status_code == 202, response.text
        body = response.json()
        assert body["queued"] is True and body["sessionId"] == sid
        queued.append(body)
    assert [q["position"] for q in queued] == [1, 2]
    assert _run(client, queued[0]["runId"])["status"] == "queued"
    assert_error(
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "x"}), 409, "turn_in_progress"
    )
    wait_for_message(client, sid, run_ended(queued[1]["runId"]))
    order = [
        m["content"]["text"]
        for m in client.get(f"/api/sessions/{sid}").json()["messages"]
        if m["role"] == "user"
    ]
    assert order == ["slow 10", "second", "third"]
    assert _run(client, first)["status"] == "completed"
    for q in queued:
        assert _run(client, q["runId"])["status"] == "completed"


def test_queue_after_cancel_drop_and_limits(make_client: Any, demo_repo_id: str) -> None:
    client = make_client(MAX_QUEUED_PROMPTS="2")
    repo_id = client.get("/api/repos").json()["repos"][0]["id"]
    sid = create_session(client, repo_id)["id"]
    prompt(client, sid, "slow 50")
    kept = client.post(f"/api/sessions/{sid}/prompt", json={"text": "kept", "queue": True})
    dropped = client.post(f"/api/sessions/{sid}/prompt", json={"text": "gone", "queue": True})
    assert_error(
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "full", "queue": True}),
        409,
        "queue_full",
    )
    gone = dropped.json()["runId"]
    assert client.delete(f"/api/sessions/{sid}/queue/{gone}").status_code == 204
    assert _run(client, gone)["status"] == "cancelled"
    assert_error(client.delete(f"/api/sessions/{sid}/queue/{gone}"), 404, "run_not_found")
    assert_error(client.delete(f"/api/sessions/{sid}/queue/not-a-uuid"), 422)
    client.post(f"/api/sessions/{sid}/cancel")  # the queued one starts after a cancel too
    wait_for_message(client, sid, run_ended(kept.json()["runId"]))
    assert _run(client, kept.json()["runId"])["status"] == "completed"
    assert_error(
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "x", "queue": "yes"}), 422
    )
    # idle: runs at once
    idle = client.post(f"/api/sessions/{sid}/prompt", json={"text": "now", "queue": True})
    assert idle.status_code == 202 and idle.json()["queued"] is False
    wait_for_message(client, sid, run_ended(idle.json()["runId"]))


def test_queued_prompts_are_cancelled_when_the_session_ends(
    client: TestClient, demo_repo_id: str
) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    prompt(client, sid, "slow 50")
    body = client.post(f"/api/sessions/{sid}/prompt", json={"text": "later", "queue": True})
    run_id = body.json()["runId"]
    assert client.post(f"/api/sessions/{sid}/complete").status_code == 200
    wait_for_message(client, sid, is_type("status", status="completed"))
    assert _run(client, run_id)["status"] == "cancelled"


def test_websocket_prompt_takes_queue(client: TestClient, demo_repo_id: str) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    prompt(client, sid, "slow 10")
    with client.websocket_connect(f"/ws/sessions/{sid}?after=999999") as ws:
        ws.send_json({"type": "prompt", "text": "via ws", "queue": True, "id": "q1"})
        while True:
            frame = ws.receive_json()
            if frame.get("type") in ("ack", "error"):
                break
    assert frame["type"] == "ack" and frame["ref"] == "q1", frame
    assert frame["queued"] is True and frame["position"] == 1
    wait_for_message(client, sid, run_ended(frame["runId"]))


# -- agents' last known controls -----------------------------------------------------------


def test_agents_carry_their_last_controls(client: TestClient, demo_repo_id: str) -> None:
    before = client.get("/api/agents").json()["agents"]
    assert all(a["controls"] is None for a in before)
    create_session(client, demo_repo_id)
    agent = client.get("/api/agents").json()["agents"][0]
    assert agent["controls"]["modes"]["available"]


def test_more_refusals(client: TestClient, demo_repo_id: str) -> None:
    session = create_session(client, demo_repo_id)
    sid = session["id"]
    # visibility can be set (API.md "Users and access"); a session's owner and admins see it
    assert (
        client.patch(f"/api/sessions/{sid}", json={"visibility": "private"}).json()["visibility"]
        == "private"
    )
    missing = "00000000-0000-4000-8000-000000000000"
    assert_error(
        client.delete(f"/api/sessions/{missing}/queue/{missing}"), 404, "session_not_found"
    )
    assert_error(client.delete(f"/api/sessions/{sid}/queue/{missing}"), 404, "run_not_found")
    client.post(f"/api/sessions/{sid}/complete")
    assert_error(client.delete(f"/api/sessions/{sid}/queue/{missing}"), 404, "run_not_found")
    assert_error(
        client.post(f"/api/sessions/{sid}/prompt", json={"text": "x", "queue": True}),
        409,
        "session_not_active",
    )
