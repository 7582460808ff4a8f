"""The live ``message`` frame the writer builds as text is byte for byte the frame
orjson makes of the same object; rows outside the writer's usual shapes take orjson's
path."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from server.stream.frames import stored_frame, stored_frames
from server.stream.ids import new_id
from store.message_row import MessageRow

STAMP = "2026-11-24 21:38:41.985012"
TRICKY = 'h\u00e9llo "q" \\ \u2028 \U0001f600\n\x01'
SESSION = "0b5c5a2e-1b1a-4c1e-9e47-4a3f1e2d3c4b"


def expected(row: MessageRow) -> bytes:
    return orjson.dumps(
        {
            "type": "message",
            "message": {
                "id": row.id,
                "sessionId": row.session_id,
                "runId": row.run_id,
                "seq": row.seq,
                "role": row.role,
                "content": orjson.loads(row.content),
                "stepNumber": row.step_number,
                "timestamp": "2026-11-24T21:38:41.985Z",
            },
        }
    )


def row(**changes: Any) -> MessageRow:
    values: dict[str, Any] = {
        "id": new_id(),
        "session_id": SESSION,
        "seq": 3,
        "run_id": None,
        "step": None,
        "role": "agent",
        "content": {"type": "text", "text": "x", "partial": True},
    } | changes
    content = orjson.dumps(values["content"]).decode()
    return MessageRow(
        id=values["id"],
        session_id=values["session_id"],
        seq=values["seq"],
        run_id=values["run_id"],
        step_number=values["step"],
        role=values["role"],
        type=values["content"]["type"],
        partial=True,
        dropped=False,
        content=content,
        raw=None,
        created_at=STAMP,
    )


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"run_id": new_id(), "step": 0},
        {"run_id": new_id(), "step": 12, "role": "system"},
        {"content": {"type": "text", "text": TRICKY, "partial": False}},
        {"content": {"type": "tool", "result": [1, 2.5, None, {"a": True}]}, "role": "user"},
        {"id": 'a"b'},  # not a plain id: orjson escapes it
        {"session_id": "s\n"},
        {"run_id": "r\\"},
        {"role": "ag ent"},
        {"id": "\u00e9t\u00e9"},  # letters JSON keeps as they are
        {"step": True},  # not an int: orjson writes true
        {"session_id": ""},
    ],
)
def test_the_text_frame_is_the_bytes_orjson_makes(changes: dict[str, Any]) -> None:
    message = row(**changes)
    assert stored_frame(message) == expected(message)
    assert stored_frame(message) == expected(message)  # again, with the plain strings known


def test_a_batch_s_frames_are_each_row_s_frame_per_session_in_order() -> None:
    """``stored_frames`` shares the text around id, seq and content between rows of the
    same columns; every frame is still ``stored_frame``'s, whatever changes from row to
    row (a step of True after a step of 1: equal, yet written differently)."""
    run, other = new_id(), "0b5c5a2e-1b1a-4c1e-9e47-4a3f1e2d3c4c"
    batch = [
        row(seq=1),
        row(seq=2),
        row(seq=3, run_id=run, step=1),
        row(seq=4, run_id=run, step=True),
        row(seq=5, run_id=run, step=1, role="system"),
        row(seq=1, session_id=other),
        row(seq=6, id='a"b'),
        row(seq=7, content={"type": "text", "text": TRICKY, "partial": True}),
        row(seq=2, session_id=other, run_id="r\\"),
        row(seq=8),
    ]
    frames = stored_frames(batch)
    assert list(frames) == [SESSION, other]
    for session, got in frames.items():
        mine = [message for message in batch if message.session_id == session]
        assert got == [(message.seq, stored_frame(message)) for message in mine]
        assert [frame for _, frame in got] == [expected(message) for message in mine]
