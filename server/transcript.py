"""The conversation rebuilt from stored messages, in the shape an LLM chat API takes,
and its rendering as a preamble that hands an agent its earlier context."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from store import Message

__all__ = ["build_transcript", "render_preamble"]


def build_transcript(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Finished, non-dropped messages → ``[{role, content, toolCalls?, toolCallId?}]``.
    Deterministic: equal input gives equal output."""
    out: list[dict[str, Any]] = []
    tools: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for message in messages:
        if message.dropped or message.partial:
            continue
        content = message.content
        kind = content.get("type")
        if kind == "text" and message.role == "user":
            _close_tools(out, tools, order)
            out.append({"role": "user", "content": content.get("text", "")})
        elif kind == "text" and message.role == "agent":
            _close_tools(out, tools, order)
            out.append({"role": "assistant", "content": content.get("text", "")})
        elif kind == "tool":
            call_id = str(content.get("toolCallId"))
            if call_id not in tools:
                order.append(call_id)
            tools[call_id] = content
    _close_tools(out, tools, order)
    return out


def _close_tools(out: list[dict[str, Any]], tools: dict[str, dict[str, Any]], order: list[str]) -> None:
    """Emit the tool calls seen since the last text as one assistant turn + results."""
    if not order:
        return
    calls = [
        {
            "id": call_id,
            "name": tools[call_id].get("tool") or "tool",
            "arguments": orjson.dumps(tools[call_id].get("args"), option=orjson.OPT_SORT_KEYS).decode(),
        }
        for call_id in order
    ]
    out.append({"role": "assistant", "content": "", "toolCalls": calls})
    for call_id in order:
        state = tools[call_id]
        result = {"status": state.get("status"), "result": state.get("result")}
        out.append(
            {
                "role": "tool",
                "toolCallId": call_id,
                "content": orjson.dumps(result, option=orjson.OPT_SORT_KEYS).decode(),
            }
        )
    tools.clear()
    order.clear()


def render_preamble(transcript: list[dict[str, Any]]) -> str:
    """The earlier conversation as plain text for the first prompt of a fresh agent."""
    lines = [
        "This conversation continues an earlier one; you were restarted without its memory.",
        "Here is the conversation so far (for context only; do not redo its tool calls):",
        "",
    ]
    for entry in transcript:
        role = entry["role"]
        if entry.get("toolCalls"):
            for call in entry["toolCalls"]:
                lines.append(f"[assistant called tool {call['name']} ({call['id']}) with {call['arguments']}]")
        elif role == "tool":
            lines.append(f"[tool result {entry['toolCallId']}: {entry['content']}]")
        else:
            lines.append(f"{role}: {entry['content']}")
    lines += ["", "End of the earlier conversation. The new request follows.", ""]
    return "\n".join(lines)
