"""Any ``q`` is answered 200 or 422, never 500 (API.md, Finding and keeping sessions):
hypothesis writes the queries, against a store holding text to match, on SQLite (and
PostgreSQL in the second pass)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from tests.helpers import create_session, prompt, run_ended, wait_for_message

# FTS5 and tsquery syntax, mixed with words and anything else
SYNTAX = st.sampled_from(
    [
        '"',
        "'",
        "*",
        "^",
        ":",
        "(",
        ")",
        "-",
        "+",
        "&",
        "|",
        "!",
        "<->",
        "NEAR",
        "AND",
        "OR",
        "NOT",
        "\\",
        "\x00",
        "%",
        "_",
        "{",
        "}",
        "said",
        "You",
        "col:",
        ":*",
    ]
)
QUERIES = st.one_of(
    st.text(max_size=60),
    st.lists(st.one_of(SYNTAX, st.text(max_size=8)), max_size=12).map(" ".join),
    st.text(min_size=490, max_size=520),
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(q=QUERIES, archived=st.sampled_from(["false", "true", "all"]))
def test_any_query_is_200_or_422(
    client: TestClient, demo_repo_id: str, q: str, archived: str
) -> None:
    _ensure_text(client, demo_repo_id)
    response = client.get("/api/sessions", params={"q": q, "archived": archived})
    assert response.status_code in (200, 422), (q, response.status_code, response.text[:300])
    if response.status_code == 200:
        body: dict[str, Any] = response.json()
        assert body["total"] >= len(body["sessions"])
        for session in body["sessions"] if q.strip() else ():  # blank: no search
            assert isinstance(session["match"]["snippet"], str)


_seeded: set[int] = set()


def _ensure_text(client: TestClient, repo_id: str) -> None:
    """One session with prompt and reply texts, once per client."""
    if id(client) in _seeded:
        return
    _seeded.add(id(client))
    session = create_session(client, repo_id, title="Fuzz target")
    run_id = prompt(client, session["id"], 'NEAR("quoted" AND) col:x * said')
    wait_for_message(client, session["id"], run_ended(run_id))
