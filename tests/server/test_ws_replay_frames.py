"""The replay's frames are the live frames: a message replayed after a reconnect is the
frame a viewer got live for it (byte for byte where the database keeps the writer's JSON
text, SQLite; the same JSON value on PostgreSQL, whose ``jsonb`` has its own text).

The live frames come from the rows the writer stored, the replayed ones from the rows a
page read back (``store.replay``): one builder (``stored_frame``), two sources of rows
that must not drift."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.testclient import TestClient, WebSocketTestSession

from server.settings import Settings
from server.stream.frames import stored_frame
from store.message_row import MessageRow
from tests.helpers import create_session, prompt

# A text with what JSON escapes or encodes as UTF-8, then a turn of tool calls.
UUID = "00000000-0000-4000-8000-000000000001"
PROMPTS = ('ünïcödé "quoted" \\ back\tslash\nline ☃ \U0001f600', "tools 2")


def _frames_until_live(ws: WebSocketTestSession) -> list[str]:
    """The raw text of the frames after hello, up to ``live``."""
    assert orjson.loads(ws.receive_text())["type"] == "hello"
    frames = []
    while (text := ws.receive_text()) != '{"type":"live"}':
        frames.append(text)
    return frames


def _is_run_end(frame: dict[str, Any], run_id: str) -> bool:
    content = frame["message"]["content"] if frame["type"] == "message" else {}
    return (
        content.get("type") == "run"
        and content.get("runId") == run_id
        and (content.get("status") != "running")
    )


def test_a_replayed_frame_is_the_live_frame_of_its_message(
    client: TestClient, settings: Settings, demo_repo_id: str
) -> None:
    session = create_session(client, demo_repo_id)
    url = f"/ws/sessions/{session['id']}"
    live: dict[int, str] = {}
    with client.websocket_connect(url) as ws:
        before = _frames_until_live(ws)
        for text in PROMPTS:
            run_id = prompt(client, session["id"], text)
            while True:
                raw = ws.receive_text()
                frame = orjson.loads(raw)
                assert frame["type"] == "message", frame
                live[frame["message"]["seq"]] = raw
                if _is_run_end(frame, run_id):
                    break
    kinds = {orjson.loads(t)["message"]["content"]["type"] for t in live.values()}
    assert {"text", "tool", "run"} <= kinds, kinds  # varied turns, not one shape
    contents = [orjson.loads(t)["message"]["content"] for t in live.values()]
    assert any(PROMPTS[0] in str(c.get("text")) for c in contents)

    with client.websocket_connect(url) as ws:
        replayed = _frames_until_live(ws)
    by_seq = {orjson.loads(t)["message"]["seq"]: t for t in replayed}
    assert list(by_seq) == sorted(by_seq)
    assert len(by_seq) == len(before) + len(live)
    for seq, text in live.items():
        if settings.database_url.startswith("sqlite"):
            assert by_seq[seq] == text
        else:
            assert orjson.loads(by_seq[seq]) == orjson.loads(text)

    # From a cursor in the middle of the turn: the same frames from there on.
    cursor = sorted(live)[len(live) // 2]
    with client.websocket_connect(f"{url}?after={cursor}") as ws:
        tail = _frames_until_live(ws)
    assert [orjson.loads(t) for t in tail] == [
        orjson.loads(by_seq[seq]) for seq in by_seq if seq > cursor
    ]


def test_the_frame_of_each_stored_timestamp_form() -> None:
    """SQLite's stored text (with microseconds, as the server writes it and as
    ``store.replay`` reads PostgreSQL's, or without a fraction, as a raw insert of
    ``str(datetime)`` leaves it) gives API.md's timestamp."""
    content = '{"type":"text","text":"hi","partial":false}'
    cases = {
        "2026-01-01 12:00:00.123456": "2026-01-01T12:00:00.123Z",
        "2026-01-01 12:00:00.999999": "2026-01-01T12:00:00.999Z",
        "2026-01-01 12:00:00": "2026-01-01T12:00:00.000Z",
    }
    for stamp, timestamp in cases.items():
        row = MessageRow(
            id=UUID,
            session_id=UUID,
            seq=7,
            run_id=None,
            step_number=2,
            role="agent",
            type="text",
            partial=False,
            dropped=False,
            content=content,
            raw=None,
            created_at=stamp,
        )
        message = orjson.loads(stored_frame(row))["message"]
        assert message["timestamp"] == timestamp
        assert message["content"] == orjson.loads(content)
