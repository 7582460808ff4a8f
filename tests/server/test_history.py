"""History as an event log: fork (copy), rewind (overwrite), export and import, against
the real app (TestClient) and the real demo agent. Turns are followed over the WebSocket
stream; nothing waits on a sleep."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from starlette.testclient import TestClient

from server.app import create_app
from server.settings import Settings
from tests.helpers import assert_error, create_session

MISSING = "00000000-0000-4000-8000-000000000000"
NDJSON = "application/x-ndjson"


@dataclass
class Turn:
    run_id: str
    status: str
    messages: list[dict[str, Any]]

    @property
    def reply(self) -> str:
        """The agent's final text of the turn."""
        texts = [
            m["content"]["text"]
            for m in self.messages
            if m["role"] == "agent"
            and m["content"]["type"] == "text"
            and not m["content"]["partial"]
        ]
        return str(texts[-1])

    @property
    def end_seq(self) -> int:
        return int(max(m["seq"] for m in self.messages))


def run_turn(client: TestClient, session_id: str, text: str, *, answer: str | None = None) -> Turn:
    """Prompt over the WebSocket and follow the stream until this turn's run ended,
    answering permission requests with ``answer``."""
    last = client.get(f"/api/sessions/{session_id}").json()["lastSeq"]
    with client.websocket_connect(f"/ws/sessions/{session_id}?after={last}") as ws:
        assert ws.receive_json()["type"] == "hello"
        while ws.receive_json()["type"] != "live":
            pass
        ws.send_json({"type": "prompt", "text": text, "id": "prompt"})
        run_id, ended, seen = None, {}, []
        while run_id is None or run_id not in ended:
            frame = ws.receive_json()
            if frame["type"] == "error":
                raise AssertionError(frame)
            if frame["type"] == "ack" and frame["ref"] == "prompt":
                run_id = frame["runId"]
            if frame["type"] != "message":
                continue
            message = frame["message"]
            seen.append(message)
            content = message["content"]
            if content["type"] == "permission" and content["outcome"] is None:
                assert answer is not None, "unexpected permission request"
                ws.send_json(
                    {"type": "permission", "requestId": content["requestId"], "optionId": answer}
                )
            if content["type"] == "run" and content["status"] != "running":
                ended[content["runId"]] = content["status"]
    return Turn(run_id, ended[run_id], seen)


def wait_run_end(client: TestClient, session_id: str, run_id: str) -> None:
    with client.websocket_connect(f"/ws/sessions/{session_id}?after=0") as ws:
        while True:
            frame = ws.receive_json()
            if frame["type"] == "message":
                content = frame["message"]["content"]
                if (
                    content["type"] == "run"
                    and content["runId"] == run_id
                    and content["status"] != "running"
                ):
                    return


def all_messages(client: TestClient, session_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/api/sessions/{session_id}/messages?limit=5000")
    assert response.status_code == 200
    return list(response.json()["messages"])


def export_lines(client: TestClient, session_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/api/sessions/{session_id}/export")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    assert response.content.endswith(b"\n")
    return [orjson.loads(line) for line in response.content.splitlines()]


@pytest.fixture
def tight_client(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    """One active session at most, 4 KiB bodies."""
    settings = make_settings(MAX_CONCURRENT_SESSIONS="1", MAX_BODY_BYTES="4096")
    with TestClient(create_app(settings)) as test_client:
        yield test_client


# -- fork --------------------------------------------------------------------------------


def test_fork_at_several_points_then_copies_and_original_diverge(
    client: TestClient,
    demo_repo_id: str,
) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    first = run_turn(client, sid, "alpha")
    run_turn(client, sid, "beta")
    original = all_messages(client, sid)
    last_seq = client.get(f"/api/sessions/{sid}").json()["lastSeq"]

    response = client.post(f"/api/sessions/{sid}/fork", json={"uptoSeq": first.end_seq})
    assert response.status_code == 201, response.text
    early = response.json()
    assert early["forkedFrom"] == {"sessionId": sid, "seq": first.end_seq}
    assert (early["status"], early["repoId"], early["agentId"]) == (
        "active",
        demo_repo_id,
        "default",
    )
    whole = client.post(f"/api/sessions/{sid}/fork", json={}).json()
    assert whole["forkedFrom"] == {"sessionId": sid, "seq": last_seq}
    empty = client.post(f"/api/sessions/{sid}/fork", json={"uptoSeq": 0}).json()
    assert empty["forkedFrom"] == {"sessionId": sid, "seq": 0}

    # Copies: same content, raw and timestamps; new ids; seq from 1; no run ids.
    copied = export_lines(client, early["id"])[1:]
    source = [m for m in export_lines(client, sid)[1:] if m["seq"] <= first.end_seq]
    assert len(copied) == len(source) + 1  # + the fork's own "created" status
    for seq, (copy, orig) in enumerate(zip(copied, source, strict=False), start=1):
        assert copy["seq"] == seq and copy["id"] != orig["id"] and copy["runId"] is None
        assert (copy["content"], copy["raw"], copy["timestamp"], copy["role"]) == (
            orig["content"],
            orig["raw"],
            orig["timestamp"],
            orig["role"],
        )
    assert copied[-1]["content"]["reason"] == "created" and copied[-1]["seq"] == len(source) + 1
    assert [m["content"]["reason"] for m in all_messages(client, empty["id"])] == ["created"]

    # The early copy's agent got the copied conversation (alpha) and nothing later (beta).
    run_turn(client, early["id"], "gamma")
    fork_history = run_turn(client, early["id"], "history").reply
    assert "user: alpha" in fork_history and "gamma" in fork_history
    assert "beta" not in fork_history
    whole_reply = run_turn(client, whole["id"], "history").reply
    assert "user: alpha" in whole_reply and "user: beta" in whole_reply

    # The original goes on by itself, its earlier messages untouched.
    run_turn(client, sid, "delta")
    original_history = run_turn(client, sid, "history").reply
    assert "History: alpha | beta | delta" in original_history and "gamma" not in original_history
    assert all_messages(client, sid)[: len(original)] == original
    assert [
        e["content"]
        for e in client.get(f"/api/sessions/{early['id']}/transcript").json()["messages"]
        if e["role"] == "user"
    ] == ["alpha", "gamma", "history"]


def test_fork_rejections(client: TestClient, demo_repo_id: str) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    last = client.get(f"/api/sessions/{sid}").json()["lastSeq"]
    for bad in (last + 1, -1, "1", True, 1.5):
        response = client.post(f"/api/sessions/{sid}/fork", json={"uptoSeq": bad})
        assert "uptoSeq" in assert_error(response, 422, "validation_error")["message"]
    assert_error(client.post(f"/api/sessions/{MISSING}/fork", json={}), 404, "session_not_found")
    assert_error(client.post("/api/sessions/not-a-uuid/fork", json={}), 422, "validation_error")
    assert_error(
        client.post(
            f"/api/sessions/{sid}/fork",
            content=b"{nope",
            headers={"content-type": "application/json"},
        ),
        400,
        "invalid_json",
    )
    assert client.get("/api/sessions").json()["total"] == 1


def test_fork_over_the_limit_is_429_and_creates_nothing(tight_client: TestClient) -> None:
    repo_id = tight_client.get("/api/repos").json()["repos"][0]["id"]
    sid = create_session(tight_client, repo_id)["id"]
    response = tight_client.post(f"/api/sessions/{sid}/fork", json={})
    error = assert_error(response, 429, "session_limit_reached")
    assert response.headers["retry-after"] == "60" and error["details"]["limit"] == 1
    assert tight_client.get("/api/sessions").json()["total"] == 1


# -- rewind ------------------------------------------------------------------------------


def test_rewind_then_prompt(client: TestClient, demo_repo_id: str) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    first = run_turn(client, sid, "alpha")
    run_turn(client, sid, "beta")
    before = client.get(f"/api/sessions/{sid}").json()["lastSeq"]
    kept = [m for m in all_messages(client, sid) if m["seq"] <= first.end_seq]

    response = client.post(f"/api/sessions/{sid}/rewind", json={"toSeq": first.end_seq})
    assert response.status_code == 200, response.text
    assert response.json()["lastSeq"] == before + 1 and response.json()["status"] == "active"

    messages = all_messages(client, sid)
    status = messages[-1]
    assert messages[:-1] == kept
    assert status["seq"] == before + 1 and status["content"] == {
        "type": "status",
        "status": "active",
        "reason": "rewind",
        "detail": {"toSeq": first.end_seq, "dropped": before - first.end_seq},
    }
    assert client.get(f"/api/sessions/{sid}").json()["messages"][-1]["seq"] == before + 1
    transcript = client.get(f"/api/sessions/{sid}/transcript").json()["messages"]
    assert "beta" not in orjson.dumps(transcript).decode()
    exported = export_lines(client, sid)[1:]
    assert [m["seq"] for m in exported] == list(range(1, before + 2))
    assert all(m["dropped"] == (first.end_seq < m["seq"] <= before) for m in exported)
    assert any(m["content"] == {"type": "text", "text": "beta"} and m["dropped"] for m in exported)
    with client.websocket_connect(f"/ws/sessions/{sid}?after=0") as ws:
        frames = [ws.receive_json() for _ in range(len(messages) + 2)]
    assert [f["message"]["seq"] for f in frames[1:-1]] == [m["seq"] for m in messages]
    assert frames[-1]["type"] == "live"

    # The next prompt starts a fresh agent that gets the remaining conversation only.
    after = run_turn(client, sid, "gamma")
    assert min(m["seq"] for m in after.messages) == before + 2
    assert "user: alpha" in after.reply and "beta" not in after.reply
    history = run_turn(client, sid, "history").reply
    assert "gamma" in history and "beta" not in history
    transcript = client.get(f"/api/sessions/{sid}/transcript").json()["messages"]
    assert [e["content"] for e in transcript if e["role"] == "user"] == [
        "alpha",
        "gamma",
        "history",
    ]
    # Forks leave the dropped messages out too.
    fork = client.post(f"/api/sessions/{sid}/fork", json={"uptoSeq": before + 1}).json()
    assert "beta" not in orjson.dumps(all_messages(client, fork["id"])).decode()


def test_rewind_rejections(client: TestClient, demo_repo_id: str) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    last = client.get(f"/api/sessions/{sid}").json()["lastSeq"]
    for body in ({}, {"toSeq": last + 1}, {"toSeq": -1}, {"toSeq": "1"}, {"toSeq": None}):
        assert_error(client.post(f"/api/sessions/{sid}/rewind", json=body), 422, "validation_error")
    assert_error(
        client.post(f"/api/sessions/{MISSING}/rewind", json={"toSeq": 0}), 404, "session_not_found"
    )

    run_id = client.post(f"/api/sessions/{sid}/prompt", json={"text": "slow 50"}).json()["runId"]
    assert_error(
        client.post(f"/api/sessions/{sid}/rewind", json={"toSeq": 1}), 409, "turn_in_progress"
    )
    assert client.post(f"/api/sessions/{sid}/cancel").status_code == 202
    wait_run_end(client, sid, run_id)
    assert not any(m["dropped"] for m in export_lines(client, sid)[1:])

    assert client.post(f"/api/sessions/{sid}/complete").status_code == 200
    assert_error(
        client.post(f"/api/sessions/{sid}/rewind", json={"toSeq": 1}), 409, "session_not_active"
    )


# -- export / import ---------------------------------------------------------------------


def _without_ids(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in line.items() if k not in ("id", "sessionId")} for line in lines]


def test_export_import_round_trip(client: TestClient, demo_repo_id: str) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    run_turn(client, sid, "tools 3")
    point = run_turn(client, sid, "write notes.txt hello", answer="allow").end_seq
    run_turn(client, sid, "dropped later")
    assert client.post(f"/api/sessions/{sid}/rewind", json={"toSeq": point}).status_code == 200

    first = client.get(f"/api/sessions/{sid}/export")
    assert "attachment" in first.headers["content-disposition"]
    exported = [orjson.loads(line) for line in first.content.splitlines()]
    header = exported[0]
    assert header == {
        "type": "session",
        "version": 1,
        "id": sid,
        "repoId": demo_repo_id,
        "agentId": "default",
        "title": "tools 3",  # the first prompt's (API.md, Finding and keeping sessions)
        "createdAt": header["createdAt"],
    }
    assert any(m["raw"] for m in exported[1:]) and any(m["dropped"] for m in exported[1:])

    response = client.post(
        f"/api/sessions/import?repoId={demo_repo_id}",
        content=first.content,
        headers={"content-type": "application/x-ndjson"},
    )
    assert response.status_code == 201, response.text
    imported = response.json()
    assert imported["status"] == "completed" and imported["id"] != sid
    assert imported["lastSeq"] == len(exported) - 1 and imported["metadata"] == {
        "importedFrom": sid
    }
    second = export_lines(client, imported["id"])
    assert second[0] == {**header, "id": imported["id"]}
    assert _without_ids(second[1:]) == _without_ids(exported[1:])
    assert {m["sessionId"] for m in second[1:]} == {imported["id"]}
    assert not {m["id"] for m in second[1:]} & {m["id"] for m in exported[1:]}
    again = export_lines(client, imported["id"])
    assert again == second  # deterministic
    assert (
        client.get(f"/api/sessions/{imported['id']}/transcript").json()
        == client.get(f"/api/sessions/{sid}/transcript").json()
    )

    # The archive takes no prompts; a fork of it does, without the dropped messages.
    prompt = client.post(f"/api/sessions/{imported['id']}/prompt", json={"text": "hi"})
    assert_error(prompt, 409, "session_not_active")
    fork = client.post(f"/api/sessions/{imported['id']}/fork", json={})
    assert fork.status_code == 201 and fork.json()["status"] == "active"
    assert "dropped later" not in orjson.dumps(all_messages(client, fork.json()["id"])).decode()
    assert "You said: write notes.txt hello" in run_turn(client, fork.json()["id"], "next").reply

    # Without ?repoId= the header names the repository; without a header, a plain file works too.
    body = b"\n".join(first.content.splitlines()[1:]) + b"\n"
    no_header = client.post(
        f"/api/sessions/import?repoId={demo_repo_id}",
        content=body,
        headers={"content-type": "application/x-ndjson"},
    )
    assert no_header.status_code == 201 and no_header.json()["metadata"] == {}
    by_header = client.post(
        "/api/sessions/import",
        content=first.content,
        headers={"content-type": "application/x-ndjson"},
    )
    assert by_header.status_code == 201 and by_header.json()["repoId"] == demo_repo_id


def _line(seq: int, /, **changes: Any) -> dict[str, Any]:
    line = {
        "id": MISSING,
        "sessionId": MISSING,
        "runId": None,
        "seq": seq,
        "role": "user",
        "content": {"type": "text", "text": f"m{seq}"},
        "stepNumber": None,
        "timestamp": "2025-01-02T03:04:05.678Z",
        "raw": None,
        "dropped": False,
    }
    line.update(changes)
    return line


def _ndjson(*items: Any) -> bytes:
    return b"".join(
        (item if isinstance(item, bytes) else orjson.dumps(item)) + b"\n" for item in items
    )


def test_import_rejections(client: TestClient, demo_repo_id: str) -> None:
    def post(
        body: bytes, query: str = f"?repoId={demo_repo_id}", content_type: str = NDJSON
    ) -> Any:
        headers = {"content-type": content_type}
        return client.post(f"/api/sessions/import{query}", content=body, headers=headers)

    def bad_line(body: bytes) -> int:
        return int(assert_error(post(body), 422, "validation_error")["details"]["line"])

    header = {
        "type": "session",
        "version": 1,
        "id": MISSING,
        "repoId": demo_repo_id,
        "agentId": "default",
        "title": "t",
        "createdAt": "2025-01-02T03:04:05.000Z",
    }
    bad_lines = {
        3: _ndjson(header, _line(1), b"{not json"),
        2: _ndjson(_line(1), b"[1, 2]"),
        4: _ndjson(header, _line(1), b"", _line(3)),
        5: _ndjson(_line(1), _line(2), _line(3), _line(4), header),
        1: _ndjson(_line(1, role="robot")),
    }
    for number, body in bad_lines.items():
        assert bad_line(body) == number
    assert "line 3: not valid JSON" in post(bad_lines[3]).json()["error"]["message"]
    for changes in (
        {"timestamp": "yesterday"},
        {"timestamp": "2025-01-02T03:04:05"},
        {"content": "hi"},
        {"content": {"type": "bogus"}},
        {"raw": [1]},
        {"runId": "x"},
        {"stepNumber": "1"},
        {"dropped": "no"},
        {"seq": True},
    ):
        assert bad_line(_ndjson(_line(1, **changes))) == 1
    assert bad_line(_ndjson({**header, "version": 2}, _line(1))) == 1
    assert_error(post(b""), 422, "validation_error")
    assert_error(post(_ndjson(header)), 422, "validation_error")
    assert_error(post(_ndjson(_line(1)), query=""), 422, "validation_error")
    assert_error(post(_ndjson(_line(1)), query="?repoId=nope"), 422, "validation_error")
    assert_error(post(_ndjson(_line(1)), query=f"?repoId={MISSING}"), 404, "repo_not_found")
    assert_error(
        post(_ndjson({**header, "agentId": "elsewhere"}, _line(1))), 422, "validation_error"
    )
    assert (
        post(
            _ndjson({**header, "agentId": "elsewhere"}, _line(1)), query="?agentId=default"
        ).status_code
        == 201
    )
    assert_error(post(_ndjson(_line(1)), content_type="text/plain"), 400, "invalid_json")
    assert client.get("/api/sessions").json()["total"] == 1  # only the one good import


def test_import_is_an_archive_outside_the_limit_and_bodies_have_a_limit(
    tight_client: TestClient,
) -> None:
    repo_id = tight_client.get("/api/repos").json()["repos"][0]["id"]
    create_session(tight_client, repo_id)
    body = _ndjson(
        _line(1), _line(2, role="agent", content={"type": "text", "text": "hi", "partial": False})
    )
    response = tight_client.post(
        f"/api/sessions/import?repoId={repo_id}",
        content=body,
        headers={"content-type": "application/x-ndjson"},
    )
    assert response.status_code == 201 and response.json()["status"] == "completed"
    assert_error(
        tight_client.post(f"/api/sessions/{response.json()['id']}/fork", json={}),
        429,
        "session_limit_reached",
    )
    huge = _ndjson(*[_line(n) for n in range(1, 40)])
    assert len(huge) > 4096
    assert_error(
        tight_client.post(
            f"/api/sessions/import?repoId={repo_id}",
            content=huge,
            headers={"content-type": "application/x-ndjson"},
        ),
        413,
        "payload_too_large",
    )


def test_export_of_an_unknown_session_is_404(client: TestClient) -> None:
    assert_error(client.get(f"/api/sessions/{MISSING}/export"), 404, "session_not_found")
    assert_error(client.get(f"/api/sessions/{MISSING}/transcript"), 404, "session_not_found")
