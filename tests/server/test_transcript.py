"""The transcript: pure rules on hand-made messages, then the shape of a real turn with
tool calls through ``GET /api/sessions/{id}/transcript``."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.testclient import TestClient

from server.sessions.live.transcript import build_transcript, render_preamble
from store import Message
from tests.helpers import assert_error, create_session
from tests.server.test_history import MISSING, run_turn


def _messages(
    *items: tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], bool],
) -> list[Message]:
    out = []
    for seq, item in enumerate(items, start=1):
        role, content = item[0], item[1]
        dropped = bool(item[2]) if len(item) > 2 else False
        out.append(
            Message(
                id=f"m{seq}",
                session_id="s",
                seq=seq,
                run_id=None,
                step_number=None,
                role=role,
                type=content["type"],
                partial=bool(content.get("partial")),
                dropped=dropped,
                content=content,
                raw=None,
            )
        )
    return out


def _text(role: str, text: str, partial: bool = False) -> tuple[str, dict[str, Any]]:
    return (
        role,
        {"type": "text", "text": text, **({"partial": partial} if role == "agent" else {})},
    )


def _tool(
    call_id: str, status: str, args: Any = None, result: Any = None
) -> tuple[str, dict[str, Any]]:
    return (
        "system",
        {
            "type": "tool",
            "toolCallId": call_id,
            "tool": f"Tool {call_id}",
            "kind": "read",
            "status": status,
            "args": args,
            "result": result,
            "locations": [],
            "content": [],
        },
    )


def test_chunks_superseded_by_the_final_text_are_skipped_and_dropped_messages_left_out() -> None:
    messages = _messages(
        ("system", {"type": "status", "status": "active", "reason": "created", "detail": {}}),
        _text("user", "hi"),
        ("agent", {"type": "thought", "text": "hmm", "partial": False}),
        _text("agent", "Hel", partial=True),
        _text("agent", "lo", partial=True),
        _text("agent", "Hello"),
        ("system", {"type": "usage", "used": 1, "size": 2, "cost": None}),
        (*_text("user", "forget me"), True),
        (*_text("agent", "forgotten"), True),
    )
    assert build_transcript(messages) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello"},
    ]


def test_tool_calls_follow_the_text_before_them_and_carry_their_last_state() -> None:
    messages = _messages(
        _text("user", "go"),
        _text("agent", "Let me look.", partial=True),
        _text("agent", "Let me look."),
        _tool("c1", "pending", {"b": 1, "a": 2}),
        _tool("c2", "pending", {"q": "x"}),
        ("system", {"type": "plan", "steps": []}),
        _tool("c1", "completed", {"b": 1, "a": 2}, {"ok": True}),
        _tool("c2", "error", {"q": "x"}, {"error": "no"}),
        _text("agent", "Done."),
    )
    assert build_transcript(messages) == [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "toolCalls": [
                {"id": "c1", "name": "Tool c1", "arguments": '{"a":2,"b":1}'},
                {"id": "c2", "name": "Tool c2", "arguments": '{"q":"x"}'},
            ],
        },
        {
            "role": "tool",
            "toolCallId": "c1",
            "content": '{"result":{"ok":true},"status":"completed"}',
        },
        {
            "role": "tool",
            "toolCallId": "c2",
            "content": '{"result":{"error":"no"},"status":"error"}',
        },
        {"role": "assistant", "content": "Done."},
    ]


def test_a_cut_mid_stream_keeps_the_unclosed_chunks_and_turns_that_ended_badly_are_said() -> None:
    messages = _messages(
        _text("user", "one"),
        _tool("c1", "in_progress", {}),
        _text("agent", "Part", partial=True),
        _text("agent", "ial", partial=True),
        (
            "system",
            {
                "type": "run",
                "runId": "r",
                "status": "cancelled",
                "stopReason": "cancelled",
                "durationMs": 1,
            },
        ),
        _text("user", "two"),
        (
            "system",
            {
                "type": "run",
                "runId": "r2",
                "status": "completed",
                "stopReason": "end_turn",
                "durationMs": 1,
            },
        ),
        _text("agent", "tail", partial=True),
    )
    assert build_transcript(messages) == [
        {"role": "user", "content": "one"},
        {
            "role": "assistant",
            "content": "",
            "toolCalls": [{"id": "c1", "name": "Tool c1", "arguments": "{}"}],
        },
        {"role": "tool", "toolCallId": "c1", "content": '{"result":null,"status":"in_progress"}'},
        {"role": "assistant", "content": "Partial"},
        {"role": "system", "content": "The previous turn was cancelled before it finished."},
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": "tail"},
    ]


def test_equal_input_gives_byte_identical_output_and_a_readable_preamble() -> None:
    def build() -> bytes:
        messages = _messages(
            _text("user", "hi"),
            _tool("c1", "completed", {"z": 1, "a": [1, {"y": 2, "b": 3}]}, 7),
            _text("agent", "ok"),
        )
        return orjson.dumps(build_transcript(messages))

    assert build() == build()
    preamble = render_preamble(orjson.loads(build()))
    assert "user: hi\n" in preamble and "assistant: ok\n" in preamble
    assert '[assistant called tool Tool c1 (c1) with {"a":[1,{"b":3,"y":2}],"z":1}]' in preamble
    assert '[tool result c1: {"result":7,"status":"completed"}]' in preamble
    assert preamble.endswith("[End of the earlier conversation. The new request follows.]\n")
    assert build_transcript([]) == []


def test_transcript_of_a_turn_with_tool_calls(client: TestClient, demo_repo_id: str) -> None:
    sid = create_session(client, demo_repo_id)["id"]
    turn = run_turn(client, sid, "tools 3")
    response = client.get(f"/api/sessions/{sid}/transcript")
    assert response.status_code == 200
    assert response.json() == {
        "messages": [
            {"role": "user", "content": "tools 3"},
            {
                "role": "assistant",
                "content": "",
                "toolCalls": [
                    {"id": f"call_{k}", "name": f"Tool {k}", "arguments": f'{{"k":{k}}}'}
                    for k in (1, 2, 3)
                ],
            },
            {
                "role": "tool",
                "toolCallId": "call_1",
                "content": '{"result":{"k":1},"status":"completed"}',
            },
            {
                "role": "tool",
                "toolCallId": "call_2",
                "content": '{"result":{"k":2},"status":"completed"}',
            },
            {
                "role": "tool",
                "toolCallId": "call_3",
                "content": '{"result":{"error":"tool 3 failed"},"status":"error"}',
            },
            {"role": "assistant", "content": turn.reply},
        ]
    }
    assert client.get(f"/api/sessions/{sid}/transcript").content == response.content

    # Cut in the middle of the streamed answer: the chunks so far stand in for it.
    chunks = [
        m for m in turn.messages if m["content"]["type"] == "text" and m["content"].get("partial")
    ]
    cut = client.get(f"/api/sessions/{sid}/transcript?uptoSeq={chunks[1]['seq']}").json()[
        "messages"
    ]
    assert cut[-1] == {
        "role": "assistant",
        "content": chunks[0]["content"]["text"] + chunks[1]["content"]["text"],
    }
    assert client.get(f"/api/sessions/{sid}/transcript?uptoSeq=1").json() == {"messages": []}

    last = client.get(f"/api/sessions/{sid}").json()["lastSeq"]
    for bad in (str(last + 1), "-1", "x"):
        assert_error(
            client.get(f"/api/sessions/{sid}/transcript?uptoSeq={bad}"), 422, "validation_error"
        )
    assert_error(client.get(f"/api/sessions/{MISSING}/transcript"), 404, "session_not_found")
    assert_error(client.get("/api/sessions/nope/transcript"), 422, "validation_error")
