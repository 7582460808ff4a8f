"""Issue 28, point 7: "Always allow" was asked again on the next write. The server relays
the person's choice to the agent as ACP asks (the selected ``allow_always`` option); it
was the demo agent that ignored it. Now the next write of the session is not asked."""

from __future__ import annotations

from starlette.testclient import TestClient

from tests.helpers import create_session, messages
from tests.server.test_history import run_turn


def demo_repo(client: TestClient) -> str:
    repos = client.get("/api/repos").json()["repos"]
    return str(next(r["id"] for r in repos if r["name"] == "demo"))


def test_always_allow_is_relayed_and_remembered(client: TestClient) -> None:
    session = create_session(client, demo_repo(client))
    sid = session["id"]
    first = run_turn(client, sid, "write one.txt 1", answer="allow-always")
    assert first.status == "completed"
    asked = [m for m in first.messages if m["content"]["type"] == "permission"]
    (request,) = {m["content"]["requestId"] for m in asked}
    final = [m for m in messages(client, sid) if m["content"]["type"] == "permission"][-1]
    assert final["content"]["requestId"] == request
    assert final["content"]["outcome"] == {"outcome": "selected", "optionId": "allow-always"}
    # the next write is not asked (run_turn fails on any permission request without answer)
    second = run_turn(client, sid, "write two.txt 2")
    assert second.status == "completed"
    assert not [m for m in second.messages if m["content"]["type"] == "permission"]


def test_allow_once_is_asked_again(client: TestClient) -> None:
    sid = create_session(client, demo_repo(client))["id"]
    assert run_turn(client, sid, "write one.txt 1", answer="allow").status == "completed"
    again = run_turn(client, sid, "write two.txt 2", answer="allow")
    assert [m for m in again.messages if m["content"]["type"] == "permission"]
