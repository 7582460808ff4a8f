"""Questions the agent waits on a person for (permission requests, elicitations): one
mechanism for both. A question is staged and stored as a message, waits for the first
answer, or is answered for the person on timeout (``PERMISSION_TIMEOUT``), on cancel and
when its turn or the session ends; every outcome is stored and published once."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

import anyio
import msgspec

from agent_bridge.jsontypes import JsonObject
from server.sessions.errors import Conflict, NotFound
from store.operations import WriteOp

__all__ = ["PendingRequest", "RequestKind"]


class RequestKind(msgspec.Struct, frozen=True):
    """What tells a permission request from an elicitation."""

    name: str  # the message type and the ``<name>_not_found`` code
    answered_code: str  # 409 for a second answer
    answered_message: str
    cancelled: JsonObject  # the outcome of a cancel (turn cancelled or ended, session end)
    on_timeout: Callable[[PendingRequest], JsonObject]
    record: Callable[[str, JsonObject, datetime], WriteOp] | None = None
    """The op that records a decision beyond its message (the permissions table)."""
    observe_wait: Callable[[float], None] | None = None

    def not_found(self, request_id: str) -> NotFound:
        return NotFound(
            self.name,
            request_id,
            f"No {self.name} request {request_id} in this session.",
            details={},
        )

    def answered(self) -> Conflict:
        return Conflict(self.answered_code, self.answered_message)


class PendingRequest(msgspec.Struct):
    kind: RequestKind
    request_id: str
    run_id: str | None
    tool_call_id: str | None
    content: JsonObject  # the stored message, ``outcome`` still null
    asked: float = msgspec.field(default_factory=time.monotonic)
    decided: anyio.Event = msgspec.field(default_factory=anyio.Event)
    committed: anyio.Event = msgspec.field(default_factory=anyio.Event)
    outcome: JsonObject | None = None
