"""One prompt turn's view of the world: what it may send, ask, and control."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any

from .sessions import CONTEXT_SIZE, Session
from .wire import JsonObject, Wire

__all__ = ["GARBAGE_LINES", "ClientCapabilities", "Turn", "text_block"]

GARBAGE_LINES = (b"Loading model...\n", b"{not json\n", b"[1,2]\n", b"42\n")


def text_block(text: str) -> JsonObject:
    return {"type": "text", "text": text}


@dataclass(frozen=True)
class ClientCapabilities:
    read_text_file: bool = False
    write_text_file: bool = False
    terminal: bool = False
    elicitation_form: bool = False
    elicitation_url: bool = False

    @classmethod
    def from_params(cls, params: JsonObject) -> ClientCapabilities:
        caps = params.get("clientCapabilities")
        caps = caps if isinstance(caps, dict) else {}
        fs = caps.get("fs")
        fs = fs if isinstance(fs, dict) else {}
        elicitation = caps.get("elicitation")
        elicitation = elicitation if isinstance(elicitation, dict) else {}
        return cls(
            read_text_file=fs.get("readTextFile") is True,
            write_text_file=fs.get("writeTextFile") is True,
            terminal=caps.get("terminal") is True,
            # ACP spells "supported" as {}: anything but absent, null or false counts
            elicitation_form=elicitation.get("form") not in (None, False),
            elicitation_url=elicitation.get("url") not in (None, False),
        )


class Turn:
    def __init__(
        self,
        wire: Wire,
        session: Session,
        text: str,
        client: ClientCapabilities,
        children: list[subprocess.Popen[bytes]],
    ) -> None:
        self.wire = wire
        self.session = session
        self.text = text
        self.client = client
        self.children = children  # processes the agent started (grandchildren mode)
        self.reply: list[str] = []
        self._garbage: list[bytes] = []
        self._updates_sent = 0
        self._tokens_at_start = session.tokens_used()

    @property
    def cwd(self) -> str:
        return self.session.cwd

    def start_garbage(self) -> None:
        """Put the non-JSON GARBAGE_LINES on stdout between the next updates."""
        self._garbage = list(GARBAGE_LINES)

    async def update(
        self, update: JsonObject, *, flush: bool = True, stamp: JsonObject | None = None
    ) -> None:
        """One ``session/update`` notification (garbage lines go between updates)."""
        if self._updates_sent and self._garbage:
            await self.wire.send(self._garbage.pop(0))
        self._updates_sent += 1
        params = {"sessionId": self.session.id, "update": update}
        await self.wire.send(
            {"jsonrpc": "2.0", "method": "session/update", "params": params},
            flush=flush,
            stamp=stamp,
        )

    @property
    def garbage_pending(self) -> bool:
        """Garbage lines are still to go between updates (so send updates one by one)."""
        return bool(self._garbage)

    async def encoded_updates(self, data: bytes, count: int, *, flush: bool) -> None:
        """``count`` ``session/update`` lines already encoded (``data``, each line ending
        in a newline); the garbage lines go before ``data`` only, so while they are
        pending send one line at a time."""
        if self._updates_sent and self._garbage:
            await self.wire.send(self._garbage.pop(0))
        self._updates_sent += count
        await self.wire.send(data, flush=flush, lines=count)

    async def think(self, text: str) -> None:
        await self.update({"sessionUpdate": "agent_thought_chunk", "content": text_block(text)})

    async def say(self, text: str) -> None:
        """An agent_message_chunk; its text becomes part of the remembered reply."""
        self.reply.append(text)
        await self.update({"sessionUpdate": "agent_message_chunk", "content": text_block(text)})

    async def plan(self, entries: list[tuple[str, str, str]]) -> None:
        """The whole plan: (content, priority, status) per entry."""
        await self.update(
            {
                "sessionUpdate": "plan",
                "entries": [
                    {"content": content, "priority": priority, "status": status}
                    for content, priority, status in entries
                ],
            }
        )

    async def tool_call(self, tool_call_id: str, title: str, kind: str, **fields: Any) -> None:
        await self.update(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": tool_call_id,
                "title": title,
                "kind": kind,
                "status": "pending",
                **fields,
            }
        )

    async def tool_update(self, tool_call_id: str, **fields: Any) -> None:
        update = {"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id, **fields}
        await self.update(update)

    async def request(self, method: str, params: JsonObject) -> Any:
        """A request to the client for this session; raises RemoteError."""
        return await self.wire.request(method, {"sessionId": self.session.id, **params})

    async def usage(self) -> None:
        """The usage_update that closes a turn: context in use and cumulative cost."""
        used = self.session.tokens_used() + sum(len(part) // 4 for part in self.reply)
        cost = self.session.charge(max(used - self._tokens_at_start, 1))
        await self.update(
            {
                "sessionUpdate": "usage_update",
                "used": used,
                "size": CONTEXT_SIZE,
                "cost": {"amount": cost, "currency": "USD"},
            }
        )
