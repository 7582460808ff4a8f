"""Message pages (``GET /api/sessions/{id}/messages``, ``GET /api/agent-runs/{id}/messages``,
the messages of ``GET /api/sessions/{id}``, an export)
read rows as text (``store.replay.view_rows`` + ``frames.row_view``), not ORM objects.
They must answer exactly what the ORM path (``list_messages`` + ``message_view``) answers
for the same filter: same messages, same order, same JSON values (raw frames and dropped
flags too), on SQLite and on PostgreSQL."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from starlette.testclient import TestClient

from server.stream.frames import message_view
from store import messages as message_store
from tests.helpers import create_session, prompt, run_ended, wait_for_message

# UTF-8 and what JSON escapes, then a turn of tool calls.
PROMPTS = ('ünïcödé "quoted" \\ back\tslash\nline ☃ \U0001f600', "tools 3")


def _orm_views(
    client: TestClient, session_id: str, where: message_store.MessageFilter, *, raw: bool
) -> list[dict[str, Any]]:
    db = client.app.state.agent_sessions.sessions.services.db  # type: ignore[attr-defined]

    async def read() -> list[dict[str, Any]]:
        async with db.read() as session:
            rows = await message_store.list_messages(session, session_id, where, limit=None)
            return [message_view(m, raw=raw) for m in rows]

    views: list[dict[str, Any]] = client.portal.call(read)  # type: ignore[union-attr]
    return orjson.loads(orjson.dumps(views))  # type: ignore[no-any-return]


def _page(client: TestClient, url: str, key: str, **params: Any) -> list[dict[str, Any]]:
    response = client.get(url, params={"limit": 1000, **params})
    assert response.status_code == 200, response.text
    return list(response.json()[key])


@pytest.fixture
def session_with_history(client: TestClient, demo_repo_id: str) -> tuple[str, list[str]]:
    session_id = create_session(client, demo_repo_id)["id"]
    runs = []
    for text in PROMPTS:
        run_id = prompt(client, session_id, text)
        wait_for_message(client, session_id, run_ended(run_id))
        runs.append(run_id)
    return session_id, runs


@pytest.mark.parametrize(
    ("params", "where"),
    [
        ({}, message_store.MessageFilter()),
        ({"partial": "false"}, message_store.MessageFilter(partial=False)),
        ({"role": "agent"}, message_store.MessageFilter(role="agent")),
        ({"type": "tool"}, message_store.MessageFilter(type="tool")),
        ({"after": 5}, message_store.MessageFilter(after=5)),
    ],
)
@pytest.mark.parametrize("raw", [False, True])
def test_a_session_page_is_what_the_orm_path_answers(
    client: TestClient,
    session_with_history: tuple[str, list[str]],
    params: dict[str, Any],
    where: message_store.MessageFilter,
    raw: bool,
) -> None:
    session_id, _runs = session_with_history
    if raw:
        params = {**params, "raw": "true"}
    page = _page(client, f"/api/sessions/{session_id}/messages", "messages", **params)
    expected = _orm_views(client, session_id, where, raw=raw)
    assert page == expected
    assert len(page) >= 3  # the filter matched something: not two empty lists
    if not params.get("type") and not params.get("role"):
        kinds = {m["content"]["type"] for m in page}
        assert {"text", "tool", "run"} <= kinds, kinds
        if raw:  # agent frames' messages carry theirs; composed ones (run, status) none
            assert any(m["raw"] is not None for m in page)
            assert any(m["raw"] is None for m in page)
    if raw:
        assert all(m["dropped"] is False for m in page)


def test_a_run_page_is_what_the_orm_path_answers(
    client: TestClient, session_with_history: tuple[str, list[str]]
) -> None:
    session_id, runs = session_with_history
    for run_id in runs:
        page = _page(client, f"/api/agent-runs/{run_id}/messages", "data")
        expected = _orm_views(
            client, session_id, message_store.MessageFilter(run_id=run_id, partial=False), raw=False
        )
        assert page == expected and page


def test_dropped_messages_leave_the_pages(
    client: TestClient, session_with_history: tuple[str, list[str]]
) -> None:
    session_id, _runs = session_with_history
    before = _page(client, f"/api/sessions/{session_id}/messages", "messages", raw="true")
    keep = before[len(before) // 2]["seq"]
    response = client.post(f"/api/sessions/{session_id}/rewind", json={"toSeq": keep})
    assert response.status_code == 200, response.text
    after = _page(client, f"/api/sessions/{session_id}/messages", "messages", raw="true")
    assert after[:-1] == [m for m in before if m["seq"] <= keep]
    assert after[-1]["content"]["reason"] == "rewind"
    assert after == _orm_views(client, session_id, message_store.MessageFilter(), raw=True)


def test_a_session_with_its_messages_is_what_the_orm_path_answers(
    client: TestClient, session_with_history: tuple[str, list[str]]
) -> None:
    session_id, _runs = session_with_history
    response = client.get(f"/api/sessions/{session_id}")
    assert response.status_code == 200, response.text
    shown = response.json()["messages"]
    expected = _orm_views(client, session_id, message_store.MessageFilter(partial=False), raw=False)
    assert shown == expected and len(shown) >= 5


def test_an_export_is_what_the_orm_path_answers(
    client: TestClient, session_with_history: tuple[str, list[str]]
) -> None:
    session_id, _runs = session_with_history
    before = _page(client, f"/api/sessions/{session_id}/messages", "messages")
    response = client.post(
        f"/api/sessions/{session_id}/rewind", json={"toSeq": before[len(before) // 2]["seq"]}
    )
    assert response.status_code == 200, response.text
    response = client.get(f"/api/sessions/{session_id}/export")
    assert response.status_code == 200, response.text
    lines = [orjson.loads(line) for line in response.content.splitlines()]
    expected = _orm_views(
        client, session_id, message_store.MessageFilter(include_dropped=True), raw=True
    )
    assert lines[1:] == expected
    assert any(m["dropped"] for m in expected) and not all(m["dropped"] for m in expected)
