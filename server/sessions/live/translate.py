"""ACP ``session/update`` payloads → typed message contents (API.md, Messages).

Pure and synchronous: a ``Translator`` per live session keeps the open text (or thought)
being streamed and the merged state of each tool call.
"""

from __future__ import annotations

import msgspec

from agent_bridge.jsontypes import JsonObject, JsonValue
from server.contents import (
    Content,
    ControlsContent,
    TextContent,
    ThoughtContent,
    ToolContent,
    UsageContent,
    as_json,
)
from server.sessions.live.agent_numbers import checked_cost, count
from server.sessions.live.controls_state import CONTROL_UPDATES, ControlsState
from server.shapes import ToolStatus

__all__ = ["Output", "Translator", "block_text", "tool_status"]

_TOOL_STATUSES: dict[str, ToolStatus] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "completed": "completed",
    "failed": "error",
    "cancelled": "cancelled",
}
_CHUNK_TYPES = {"agent_message_chunk": "text", "agent_thought_chunk": "thought"}
_TOOL_FIELDS = ("title", "kind", "status", "content", "locations", "rawInput", "rawOutput")
_TOOL_FIELD_TYPES: dict[str, type] = {
    "title": str,
    "kind": str,
    "status": str,
    "content": list,
    "locations": list,
}


def block_text(block: JsonValue) -> str:
    """The text of a ContentBlock; a short marker for non-text blocks."""
    if not isinstance(block, dict):
        return ""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text") or "")
    if kind == "resource_link":
        return f"[{block.get('name') or block.get('uri')}]"
    if kind == "resource":
        resource = block.get("resource") or {}
        return str(resource.get("text") or f"[{resource.get('uri')}]")
    return f"[{kind}]"


def tool_status(acp_status: str | None) -> ToolStatus:
    """ACP ToolCallStatus → our status (``failed`` becomes ``error``)."""
    return _TOOL_STATUSES.get(acp_status or "", "pending")


class Output(msgspec.Struct):
    """One message to store (role + content), with the frame it came from."""

    role: str
    content: Content
    raw: JsonObject | None = None

    @property
    def stored(self) -> JsonObject:
        """The content as the writer takes it."""
        return as_json(self.content)


class ToolState(msgspec.Struct):
    fields: JsonObject = msgspec.field(default_factory=dict)  # the agent's fields, type-checked

    def merge(self, update: JsonObject) -> None:
        for name in _TOOL_FIELDS:
            value = update.get(name)
            # A field of the wrong type (a title that is an object) is as if absent: the
            # tool row stores strings.
            if value is not None and isinstance(value, _TOOL_FIELD_TYPES.get(name, object)):
                self.fields[name] = value

    def content(self, tool_call_id: str) -> ToolContent:
        f = self.fields
        result = f.get("rawOutput")
        if result is None and f.get("status") in ("completed", "failed"):
            result = f.get("content")
        return {
            "type": "tool",
            "toolCallId": tool_call_id,
            "tool": f.get("title"),
            "kind": f.get("kind", "other"),
            "status": tool_status(f.get("status")),
            "args": f.get("rawInput"),
            "result": result,
            "locations": f.get("locations") or [],
            "content": f.get("content") or [],
        }


class Translator:
    """Turns updates into outputs, closing streamed text when something else arrives."""

    def __init__(self) -> None:
        self._open_type: str | None = None
        self._open_id: JsonValue = None
        self._parts: list[str] = []
        self.tools: dict[str, ToolState] = {}
        self.last_text = ""
        self.controls = ControlsState()

    def flush(self) -> list[Output]:
        """Close the open text or thought: the one message with the whole text."""
        if self._open_type is None:
            return []
        text = "".join(self._parts)
        out = Output("agent", _streamed(self._open_type, text, partial=False))
        if self._open_type == "text":
            self.last_text = text
        self._open_type, self._open_id, self._parts = None, None, []
        return [out]

    def translate(self, update: JsonObject, raw: JsonObject | None) -> list[Output]:
        kind = update.get("sessionUpdate")
        chunk_type = _CHUNK_TYPES.get(str(kind))
        if chunk_type is not None:
            return self._chunk(chunk_type, update, raw)
        out = self.flush()
        if kind == "plan":
            entries = update.get("entries") or []
            out.append(Output("system", {"type": "plan", "steps": entries}, raw))
        elif kind in ("tool_call", "tool_call_update"):
            call_id = str(update.get("toolCallId", ""))
            out.append(Output("system", self.merge_tool(call_id, update), raw))
        elif kind in CONTROL_UPDATES:
            change = self.controls.apply_update(update)
            if change is not None:  # an update that changes nothing is no message
                content: ControlsContent = {
                    "type": "controls",
                    "change": change,
                    "by": "agent",
                    "controls": self.controls.view(),
                }
                out.append(Output("system", content, raw))
        elif kind == "usage_update":
            usage: UsageContent = {
                "type": "usage",
                "used": count(update.get("used")),  # checked: the raw frame keeps them
                "size": count(update.get("size")),
                "cost": checked_cost(update.get("cost")),
            }
            out.append(Output("system", usage, raw))
        else:
            data = {k: v for k, v in update.items() if k != "sessionUpdate"}
            out.append(
                Output("system", {"type": "update", "sessionUpdate": kind, "data": data}, raw)
            )
        return out

    def merge_tool(self, call_id: str, update: JsonObject) -> ToolContent:
        state = self.tools.setdefault(call_id, ToolState())
        state.merge(update)
        return state.content(call_id)

    def _chunk(self, kind: str, update: JsonObject, raw: JsonObject | None) -> list[Output]:
        out: list[Output] = []
        message_id = update.get("messageId")
        if self._open_type is not None and (
            self._open_type != kind or (message_id is not None and message_id != self._open_id)
        ):
            out = self.flush()
        text = block_text(update.get("content"))
        self._open_type, self._open_id = kind, message_id
        self._parts.append(text)
        out.append(Output("agent", _streamed(kind, text, partial=True), raw))
        return out

    def unfinished_tools(self) -> list[str]:
        return [
            call_id
            for call_id, state in self.tools.items()
            if tool_status(state.fields.get("status")) in ("pending", "in_progress")
        ]


def _streamed(kind: str, text: str, *, partial: bool) -> TextContent | ThoughtContent:
    """A text or thought chunk (``partial``), or the whole message after its chunks."""
    if kind == "thought":
        return {"type": "thought", "text": text, "partial": partial}
    return {"type": "text", "text": text, "partial": partial}
