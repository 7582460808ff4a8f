"""The conversation rebuilt from stored messages, in the shape an LLM chat API takes,
and its rendering as a preamble that hands a fresh agent its earlier context.

``build_transcript`` is a pure function of the messages it is given (in ``seq`` order):

- a user ``text`` → ``{"role": "user", "content": text}``;
- an agent ``text`` → ``{"role": "assistant", "content": text}``: the final message
  (``partial: false``) when there is one; the ``partial: true`` chunks it supersedes are
  skipped. Chunks that no final message closed (the log was cut mid-stream: a fork point,
  a crash) are joined and stand in for it;
- the ``tool`` messages of one stretch between texts → one assistant entry with
  ``toolCalls: [{id, name, arguments}]`` (``id`` = the ACP ``toolCallId``, ``arguments``
  its ``rawInput`` as a JSON string), attached to the assistant text right before them
  when there is one, followed by one ``{"role": "tool", toolCallId, content}`` per call
  carrying the call's last merged state ``{"status", "result"}`` as a JSON string;
- a ``run`` that ended other than ``completed`` → ``{"role": "system", content}`` saying
  so, because the agent must know that its earlier turn was cut short;
- dropped messages, thoughts, plans, permissions, usage, status and other updates are
  left out (their effect is in the tool results and the text).

JSON strings inside the transcript are encoded with sorted keys, so equal input gives
byte-identical output.
"""

from collections.abc import Iterable
from typing import Literal, NotRequired, TypedDict

import orjson

from agent_bridge.jsontypes import JsonObject, JsonValue
from store import Database, Message
from store import messages as message_store

__all__ = ["ChatEntry", "ChatToolCall", "build_transcript", "render_preamble", "stored_preamble"]


class ChatToolCall(TypedDict):
    id: str  # the ACP toolCallId
    name: str
    arguments: str  # its rawInput, as a JSON string


class ChatEntry(TypedDict):
    """One entry of ``GET /api/sessions/{id}/transcript``."""

    role: Literal["user", "assistant", "system", "tool"]
    content: str
    toolCalls: NotRequired[list[ChatToolCall]]
    toolCallId: NotRequired[str]


_ENDED = {
    "cancelled": "The previous turn was cancelled before it finished.",
    "failed": "The previous turn failed before it finished.",
    "paused": "The previous turn was paused: it reached its step budget.",
    "interrupted": "The previous turn was interrupted: the server stopped during it.",
}


def _json(value: JsonValue) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


class _Builder:
    def __init__(self) -> None:
        self.out: list[ChatEntry] = []
        self.chunks: list[str] = []  # agent text chunks no final message closed yet
        # toolCallId → its last stored tool content, in call order
        self.tools: dict[str, JsonObject] = {}

    def user(self, text: str) -> None:
        self.close()
        self.out.append({"role": "user", "content": text})

    def chunk(self, text: str) -> None:
        if self.tools:
            self.close_tools()
        self.chunks.append(text)

    def assistant(self, text: str) -> None:
        self.chunks.clear()  # the final message supersedes its chunks
        self.close_tools()
        self.out.append({"role": "assistant", "content": text})

    def tool(self, content: JsonObject) -> None:
        self.close_chunks()
        self.tools[str(content.get("toolCallId"))] = content

    def system(self, text: str) -> None:
        self.close()
        self.out.append({"role": "system", "content": text})

    def close(self) -> list[ChatEntry]:
        self.close_chunks()
        self.close_tools()
        return self.out

    def close_chunks(self) -> None:
        if self.chunks:
            self.out.append({"role": "assistant", "content": "".join(self.chunks)})
            self.chunks.clear()

    def close_tools(self) -> None:
        if not self.tools:
            return
        calls: list[ChatToolCall] = [
            {
                "id": call_id,
                "name": str(state.get("tool") or "tool"),
                "arguments": _json(state.get("args")),
            }
            for call_id, state in self.tools.items()
        ]
        last = self.out[-1] if self.out else None
        if last is not None and last["role"] == "assistant" and "toolCalls" not in last:
            last["toolCalls"] = calls
        else:
            self.out.append({"role": "assistant", "content": "", "toolCalls": calls})
        for call_id, state in self.tools.items():
            result = {"status": state.get("status"), "result": state.get("result")}
            self.out.append({"role": "tool", "toolCallId": call_id, "content": _json(result)})
        self.tools.clear()


def build_transcript(messages: Iterable[Message]) -> list[ChatEntry]:
    """Stored messages (``seq`` order) → ``[{role, content, toolCalls?, toolCallId?}]``."""
    builder = _Builder()
    for message in messages:
        if message.dropped:
            continue
        content = message.content  # as stored: checked field by field
        kind = content.get("type")
        if kind == "text" and message.role == "user":
            builder.user(str(content.get("text", "")))
        elif kind == "text" and message.role == "agent":
            text = str(content.get("text", ""))
            if content.get("partial"):
                builder.chunk(text)
            else:
                builder.assistant(text)
        elif kind == "tool":
            builder.tool(content)
        elif kind == "run" and content.get("status") in _ENDED:
            builder.system(_ENDED[str(content["status"])])
    return builder.close()


def render_preamble(transcript: list[ChatEntry]) -> str:
    """The earlier conversation as plain text, prepended to the first prompt of a fresh
    agent (a fork, a rewind, a restart without ``session/load``)."""
    lines = [
        "[Context] This conversation continues an earlier one that you do not remember.",
        "Here it is, for context only: do not redo its tool calls, they already ran.",
        "",
    ]
    for entry in transcript:
        role, content = entry["role"], entry["content"]
        if role == "tool":
            lines.append(f"[tool result {entry['toolCallId']}: {content}]")
            continue
        if content:
            lines.append(f"{role}: {content}")
        for call in entry.get("toolCalls") or []:
            lines.append(
                f"[assistant called tool {call['name']} ({call['id']}) with {call['arguments']}]"
            )
    lines += ["", "[End of the earlier conversation. The new request follows.]", ""]
    return "\n".join(lines)


async def stored_preamble(database: Database, session_id: str) -> str:
    """The preamble of a session's stored conversation ("" when it has none)."""
    async with database.read() as db:
        rows = await message_store.list_messages(
            db, session_id, message_store.MessageFilter(), limit=None
        )
    transcript = build_transcript(rows)
    return render_preamble(transcript) if transcript else ""
