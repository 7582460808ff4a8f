"""Issue 17, item 10: one bad write does not fail everyone.

A group commit holds the messages of several sessions. When one receipt's operation keeps
failing, the writer commits the receipts one by one: the others commit (and their waiters
return), only the failing receipt and its session's later ones fail, the session ends in
``error`` (reason ``write_failed``) with its agent stopped, every acknowledged message
stays stored, and both seq logs stay gap-free.
"""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from server.stream.writer import Draft, Receipt
from tests.helpers import create_session, is_type, messages, wait_for_message


class Injected(RuntimeError):
    """The failure the test injects into one operation."""


async def failing_op(_db: Any) -> None:
    raise Injected("injected write failure")


async def ok_op(_db: Any) -> None:
    return None


def text(n: int) -> Draft:
    return Draft("system", {"type": "note", "text": f"note {n}"})


def assert_gap_free(rows: list[dict[str, Any]]) -> None:
    assert [m["seq"] for m in rows] == list(range(1, len(rows) + 1)), [m["seq"] for m in rows]


@pytest.fixture
def two_sessions(client: TestClient, demo_repo_id: str) -> tuple[str, str]:
    good = create_session(client, demo_repo_id)["id"]
    bad = create_session(client, demo_repo_id)["id"]
    return good, bad


def test_a_failing_operation_fails_only_its_own_session(
    client: TestClient, two_sessions: tuple[str, str]
) -> None:
    good, bad = two_sessions
    sessions = client.app.state.agent_sessions.sessions  # type: ignore[attr-defined]
    writer = sessions.services.writer
    before = {sid: len(messages(client, sid)) for sid in (good, bad)}

    def submit_one_batch() -> list[Receipt]:
        # One synchronous call in the app's loop: all queued before the writer wakes,
        # so they share one group commit.
        return [
            writer.submit(good, [text(1)], [ok_op]),
            writer.submit(bad, [text(2)], [ok_op]),  # before the bad one: acknowledged
            writer.submit(good, [text(3)]),
            writer.submit(bad, [text(4)], [failing_op]),  # fails on every attempt
            writer.submit(bad, [text(5)]),  # after it in its session: would leave a gap
            writer.submit(None, (), [ok_op]),
            writer.submit(good, [text(6)], [ok_op]),
        ]

    receipts = client.portal.call(submit_one_batch)  # type: ignore[union-attr]

    async def outcome(receipt: Receipt) -> BaseException | None:
        try:
            await receipt.wait()
        except Exception as exc:  # noqa: BLE001 - the outcome is what the test checks
            return exc
        return None

    outcomes = [client.portal.call(outcome, r) for r in receipts]  # type: ignore[union-attr]
    failed = [i for i, error in enumerate(outcomes) if error is not None]
    assert failed == [3, 4], outcomes
    assert all(isinstance(outcomes[i], Injected) for i in failed)

    # The bad session ends in error, after the message that committed, with no gap.
    wait_for_message(client, bad, is_type("status", status="error", reason="write_failed"))
    record = client.get(f"/api/sessions/{bad}").json()
    assert record["status"] == "error"
    bad_rows = messages(client, bad)
    assert_gap_free(bad_rows)
    notes = [m["content"]["text"] for m in bad_rows if m["content"]["type"] == "note"]
    assert notes == ["note 2"]
    assert bad not in sessions.registry  # its agent was stopped

    # The good session is untouched: all three messages stored, still active, and it
    # goes on storing.
    good_rows = messages(client, good)
    assert [m["content"]["text"] for m in good_rows if m["content"]["type"] == "note"] == [
        "note 1",
        "note 3",
        "note 6",
    ]
    assert len(good_rows) == before[good] + 3
    assert_gap_free(good_rows)
    assert client.get(f"/api/sessions/{good}").json()["status"] == "active"
    later = client.portal.call(lambda: writer.submit(good, [text(7)]))  # type: ignore[union-attr]
    assert client.portal.call(outcome, later) is None  # type: ignore[union-attr]
    assert_gap_free(messages(client, good))


def test_a_failing_write_without_a_session_fails_only_its_waiter(
    client: TestClient, two_sessions: tuple[str, str]
) -> None:
    good, _bad = two_sessions
    writer = client.app.state.agent_sessions.writer  # type: ignore[attr-defined]

    def submit_one_batch() -> list[Receipt]:
        return [writer.submit(None, (), [failing_op]), writer.submit(good, [text(1)])]

    receipts = client.portal.call(submit_one_batch)  # type: ignore[union-attr]

    async def errors() -> list[BaseException | None]:
        found: list[BaseException | None] = []
        for receipt in receipts:
            try:
                await receipt.wait()
            except Exception as exc:  # noqa: BLE001 - the outcome is what the test checks
                found.append(exc)
            else:
                found.append(None)
        return found

    outcome = client.portal.call(errors)  # type: ignore[union-attr]
    assert isinstance(outcome[0], Injected) and outcome[1] is None
    assert client.get(f"/api/sessions/{good}").json()["status"] == "active"
    assert_gap_free(messages(client, good))
