"""The Translator on its own: pure, table-driven. Each case is a sequence of
``session/update`` payloads as real agents send them (/work/shared/ACP.md, section 7:
claude-agent-acp, gemini-cli, codex-acp) and the message contents it must produce."""

from __future__ import annotations

from typing import Any

import pytest

from server.sessions.live.translate import Translator, block_text, tool_status

Update = dict[str, Any]


NO_CAPABILITIES = {"image": False, "audio": False, "embeddedContext": False}


def text_chunk(text: str, message_id: str | None = None, **extra: Any) -> Update:
    update: Update = {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": text},
        **extra,
    }
    if message_id is not None:
        update["messageId"] = message_id
    return update


def thought_chunk(text: str) -> Update:
    return {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": text}}


def tool(call_id: str, status: str, **fields: Any) -> dict[str, Any]:
    return {
        "type": "tool",
        "toolCallId": call_id,
        "tool": fields.get("tool"),
        "kind": fields.get("kind", "other"),
        "status": status,
        "args": fields.get("args"),
        "result": fields.get("result"),
        "locations": fields.get("locations", []),
        "content": fields.get("content", []),
    }


CLAUDE_META = {"_meta": {"claudeCode": {"toolName": "Read"}}}
DIFF = {"type": "diff", "path": "/w/demo/a.py", "oldText": "a", "newText": "b"}

CASES: dict[str, tuple[list[Update], list[tuple[str, dict[str, Any]]]]] = {
    "claude: the first chunk is the empty string; chunks stream, then one whole message": (
        [
            text_chunk(""),
            text_chunk("Hel"),
            text_chunk("lo"),
            {"sessionUpdate": "plan", "entries": []},
        ],
        [
            ("agent", {"type": "text", "text": "", "partial": True}),
            ("agent", {"type": "text", "text": "Hel", "partial": True}),
            ("agent", {"type": "text", "text": "lo", "partial": True}),
            ("agent", {"type": "text", "text": "Hello", "partial": False}),
            ("system", {"type": "plan", "steps": []}),
        ],
    ),
    "a new messageId starts a new message": (
        [text_chunk("one", "m1"), text_chunk("two", "m2")],
        [
            ("agent", {"type": "text", "text": "one", "partial": True}),
            ("agent", {"type": "text", "text": "one", "partial": False}),
            ("agent", {"type": "text", "text": "two", "partial": True}),
        ],
    ),
    "a thought closes when the answer begins": (
        [thought_chunk("hmm"), text_chunk("ok")],
        [
            ("agent", {"type": "thought", "text": "hmm", "partial": True}),
            ("agent", {"type": "thought", "text": "hmm", "partial": False}),
            ("agent", {"type": "text", "text": "ok", "partial": True}),
        ],
    ),
    "claude: usage_update with used null, and _meta on updates": (
        [
            {
                "sessionUpdate": "usage_update",
                "used": None,
                "size": 200000,
                "cost": {"amount": 0.01, "currency": "USD"},
                **CLAUDE_META,
            }
        ],
        [
            (
                "system",
                {
                    "type": "usage",
                    "used": None,
                    "size": 200000,
                    "cost": {"amount": 0.01, "currency": "USD"},
                },
            )
        ],
    ),
    "tool_call, then partial tool_call_updates merge into one record": (
        [
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "c1",
                "title": "Read a.py",
                "kind": "read",
                "status": "pending",
                "rawInput": {"path": "a.py"},
                **CLAUDE_META,
            },
            {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress"},
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "c1",
                "status": "completed",
                "rawOutput": {"bytes": 3},
                "locations": [{"path": "/w/demo/a.py"}],
            },
        ],
        [
            ("system", tool("c1", "pending", tool="Read a.py", kind="read", args={"path": "a.py"})),
            (
                "system",
                tool("c1", "in_progress", tool="Read a.py", kind="read", args={"path": "a.py"}),
            ),
            (
                "system",
                tool(
                    "c1",
                    "completed",
                    tool="Read a.py",
                    kind="read",
                    args={"path": "a.py"},
                    result={"bytes": 3},
                    locations=[{"path": "/w/demo/a.py"}],
                ),
            ),
        ],
    ),
    "gemini: a tool_call_update with no tool_call before it; failed becomes error": (
        [
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "shell-1",
                "title": "echo hi",
                "kind": "execute",
                "status": "failed",
                "content": [{"type": "content", "content": {"type": "text", "text": "denied"}}],
            }
        ],
        [
            (
                "system",
                tool(
                    "shell-1",
                    "error",
                    tool="echo hi",
                    kind="execute",
                    result=[{"type": "content", "content": {"type": "text", "text": "denied"}}],
                    content=[{"type": "content", "content": {"type": "text", "text": "denied"}}],
                ),
            )
        ],
    ),
    "gemini: an edit's diff content is kept; content replaces, null leaves it": (
        [
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "e1",
                "title": "Edit a.py",
                "kind": "edit",
                "content": [DIFF],
            },
            {"sessionUpdate": "tool_call_update", "toolCallId": "e1", "content": None},
        ],
        [
            ("system", tool("e1", "pending", tool="Edit a.py", kind="edit", content=[DIFF])),
            ("system", tool("e1", "pending", tool="Edit a.py", kind="edit", content=[DIFF])),
        ],
    ),
    "the plan is always the whole plan": (
        [
            {
                "sessionUpdate": "plan",
                "entries": [{"content": "a", "priority": "high", "status": "pending"}],
            },
            {
                "sessionUpdate": "plan",
                "entries": [{"content": "a", "priority": "high", "status": "completed"}],
            },
        ],
        [
            (
                "system",
                {
                    "type": "plan",
                    "steps": [{"content": "a", "priority": "high", "status": "pending"}],
                },
            ),
            (
                "system",
                {
                    "type": "plan",
                    "steps": [{"content": "a", "priority": "high", "status": "completed"}],
                },
            ),
        ],
    ),
    "commands and modes become controls messages with the whole state; a title stays an update": (
        [
            {
                "sessionUpdate": "available_commands_update",
                "availableCommands": [{"name": "init", "description": "Set up"}],
            },
            {"sessionUpdate": "current_mode_update", "currentModeId": "plan"},
            {"sessionUpdate": "session_info_update", "title": "Fix the bug"},
        ],
        [
            (
                "system",
                {
                    "type": "controls",
                    "change": "commands",
                    "by": "agent",
                    "controls": {
                        "modes": None,
                        "config": [],
                        "commands": [{"name": "init", "description": "Set up", "inputHint": None}],
                        "promptCapabilities": NO_CAPABILITIES,
                        "mcpServers": [],
                    },
                },
            ),
            (
                "system",
                {
                    "type": "controls",
                    "change": "mode",
                    "by": "agent",
                    "controls": {
                        "modes": {"currentModeId": "plan", "available": []},
                        "config": [],
                        "commands": [{"name": "init", "description": "Set up", "inputHint": None}],
                        "promptCapabilities": NO_CAPABILITIES,
                        "mcpServers": [],
                    },
                },
            ),
            (
                "system",
                {
                    "type": "update",
                    "sessionUpdate": "session_info_update",
                    "data": {"title": "Fix the bug"},
                },
            ),
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_translation(name: str) -> None:
    updates, expected = CASES[name]
    translator = Translator()
    got = []
    for update in updates:
        for out in translator.translate(update, {"params": {"update": update}}):
            got.append((out.role, out.content))
            assert out.raw is None or out.raw["params"]["update"] is update
    assert got == expected


def test_flush_closes_the_open_text_once_and_remembers_it() -> None:
    translator = Translator()
    translator.translate(text_chunk("done"), None)
    [closed] = translator.flush()
    assert closed.content == {"type": "text", "text": "done", "partial": False}
    assert closed.raw is None  # a whole message has no single frame
    assert translator.flush() == []
    assert translator.last_text == "done"


def test_unfinished_tools_are_the_pending_and_running_ones() -> None:
    translator = Translator()
    for call_id, status in (("a", "pending"), ("b", "in_progress"), ("c", "completed")):
        translator.translate(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": call_id,
                "title": call_id,
                "status": status,
            },
            None,
        )
    assert translator.unfinished_tools() == ["a", "b"]


@pytest.mark.parametrize(
    ("block", "text"),
    [
        ({"type": "text", "text": "hi"}, "hi"),
        ({"type": "resource_link", "name": "a.py", "uri": "file:///a.py"}, "[a.py]"),
        ({"type": "resource", "resource": {"uri": "file:///a.py", "text": "x"}}, "x"),
        ({"type": "resource", "resource": {"uri": "file:///b.bin"}}, "[file:///b.bin]"),
        ({"type": "image", "data": "…", "mimeType": "image/png"}, "[image]"),
        ("not a block", ""),
    ],
)
def test_block_text(block: Any, text: str) -> None:
    assert block_text(block) == text


@pytest.mark.parametrize(
    ("acp", "ours"),
    [
        ("pending", "pending"),
        ("in_progress", "in_progress"),
        ("completed", "completed"),
        ("failed", "error"),
        ("cancelled", "cancelled"),
        (None, "pending"),
        ("something new", "pending"),
    ],
)
def test_tool_status(acp: str | None, ours: str) -> None:
    assert tool_status(acp) == ours


@pytest.mark.parametrize(
    "malformed",
    [
        {"title": {"a": 1}, "kind": ["x"], "status": {"s": 1}},
        {"title": 7, "kind": True, "status": 3, "locations": "here", "content": {"c": 1}},
    ],
)
def test_tool_fields_of_the_wrong_type_are_dropped(malformed: dict[str, Any]) -> None:
    """A title, kind or status that is not a string (content or locations not a list) is
    as if absent: the tool row stores strings (found by tests/fuzz)."""
    translator = Translator()
    first = {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Read", "kind": "read"}
    translator.translate(first, {})
    [out] = translator.translate(
        {"sessionUpdate": "tool_call_update", "toolCallId": "t", **malformed}, {}
    )
    content = out.content
    assert (content["tool"], content["kind"], content["status"]) == ("Read", "read", "pending")
    assert content["locations"] == [] and content["content"] == []
    [fresh] = Translator().translate(
        {"sessionUpdate": "tool_call", "toolCallId": "u", **malformed}, {}
    )
    assert (fresh.content["tool"], fresh.content["kind"]) == (None, "other")
