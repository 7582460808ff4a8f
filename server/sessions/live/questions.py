"""Questions the agent waits on a person for (permission requests, elicitations): one
mechanism for both, a member of the live session. A question is staged and stored as a
message, waits for the first answer, or is answered for the person on timeout
(``PERMISSION_TIMEOUT``), on cancel and when its turn or the session ends; every outcome
is stored and published once. What tells the two kinds apart is a ``RequestKind``
(``permissions``, ``elicitations``)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from types import EllipsisType
from typing import Any

import anyio

from agent_bridge.jsontypes import JsonObject
from server.sessions.live.elicitations import ELICITATION, elicitation_asked, elicitation_outcome
from server.sessions.live.pending import PendingRequest, RequestKind
from server.sessions.live.permissions import PERMISSION, chosen_option, permission_asked
from server.sessions.live.staging import stage
from server.sessions.live.translate import Output, Translator
from server.sessions.live.turn import Turn
from server.stream.writer import Draft, Writer
from store import utcnow
from store.operations import WriteOp

__all__ = ["Questions"]


class Questions:
    """A live session's open questions, by request id: asked, not yet answered."""

    def __init__(
        self,
        session_id: str,
        writer: Writer,
        timeout: float,
        translator: Translator,
        current_turn: Callable[[], Turn | None],
        pause: Callable[[Turn], None],
    ) -> None:
        self._session_id = session_id
        self._writer = writer
        self._timeout = timeout
        self._translator = translator
        self._turn = current_turn
        self._pause = pause  # a turn over its step budget: cancelled, its run paused
        self.pending: dict[str, PendingRequest] = {}

    def __contains__(self, request_id: str) -> bool:
        return request_id in self.pending

    def ask(
        self,
        pending: PendingRequest,
        outputs: list[Output],
        ops: Sequence[WriteOp] = (),
    ) -> None:
        """Register a question and store its message (``outputs`` end with it)."""
        turn = self._turn()
        self.pending[pending.request_id] = pending
        if turn is not None and pending.tool_call_id is not None:
            turn.tools.permission_asked(pending.tool_call_id)  # a person's wait: not tool time
        drafts, tool_ops = stage(outputs, turn)
        self._writer.submit(self._session_id, drafts, [*tool_ops, *ops])

    async def wait(self, pending: PendingRequest) -> JsonObject:
        """The outcome: the first answer, or the kind's answer after the timeout."""
        with anyio.move_on_after(self._timeout):
            await pending.decided.wait()
        if not pending.decided.is_set():
            self.decide(pending, pending.kind.on_timeout(pending), "timeout")
        if pending.kind.observe_wait is not None:
            pending.kind.observe_wait(time.monotonic() - pending.asked)
        return pending.outcome or dict(pending.kind.cancelled)

    def pending_of(self, kind: RequestKind, request_id: str) -> PendingRequest:
        """The question a person answers: 404 unknown, 409 answered already."""
        pending = self.pending.get(request_id)
        if pending is None or pending.kind is not kind:
            raise kind.not_found(request_id)
        if pending.decided.is_set():
            raise kind.answered()
        return pending

    def cancel(self, reason: str, run_id: str | None | EllipsisType = ...) -> None:
        """Answer the waiting questions (all, or those of run ``run_id``) as cancelled."""
        for pending in list(self.pending.values()):
            if run_id is ... or pending.run_id == run_id:
                self.decide(pending, dict(pending.kind.cancelled), reason)

    def decide(self, pending: PendingRequest, outcome: JsonObject, reason: str) -> anyio.Event:
        """Record the outcome (in memory at once, in the log through the writer)."""
        if pending.decided.is_set():
            return pending.committed
        pending.outcome = outcome
        pending.decided.set()
        self.pending.pop(pending.request_id, None)
        turn = self._turn()
        if turn is not None and pending.tool_call_id is not None:
            turn.tools.permission_decided(pending.tool_call_id)
        content = {**pending.content, "outcome": outcome, "reason": reason}
        draft = Draft("system", content, None, pending.run_id, turn.step_number if turn else None)
        record = pending.kind.record
        ops = [record(pending.request_id, outcome, utcnow())] if record is not None else []
        receipt = self._writer.submit(self._session_id, [draft], ops)
        pending.committed = receipt.committed
        return receipt.committed

    # -- the two kinds -----------------------------------------------------------------

    def ask_permission(self, params: JsonObject, raw: JsonObject) -> Awaitable[JsonObject]:
        """``session/request_permission``: ask, and the awaitable of its outcome."""
        turn = self._turn()
        pending, outputs, ops = permission_asked(
            params, raw, self._translator, self._session_id, turn
        )
        self.ask(pending, outputs, ops)
        if turn is not None and turn.over_budget() and not turn.paused:
            turn.paused = True
            self._pause(turn)
        return self.wait(pending)

    def ask_elicitation(self, params: JsonObject, raw: JsonObject) -> Awaitable[JsonObject]:
        """``elicitation/create``: ask (a mode we do not show is declined at once)."""
        pending, outputs, supported = elicitation_asked(params, raw, self._translator, self._turn())
        self.ask(pending, outputs)
        if not supported:  # kept as it came, not shown: declined at once
            self.decide(pending, {"action": "decline"}, "unsupported_mode")
        return self.wait(pending)

    def answer_permission(self, request_id: str, option_id: str) -> anyio.Event:
        """A person's answer; the first one wins. Returns the commit event."""
        pending = self.pending_of(PERMISSION, request_id)
        return self.decide(pending, chosen_option(pending, option_id), "user")

    def answer_elicitation(
        self, request_id: str, action: str, content: Any
    ) -> tuple[anyio.Event, JsonObject]:
        """A person's answer; the first one wins. A form's ``accept`` content must match
        the requested schema (else Invalid, and the request stays pending). Returns the
        commit event and the outcome."""
        pending = self.pending_of(ELICITATION, request_id)
        outcome = elicitation_outcome(pending.content, action, content)
        return self.decide(pending, outcome, "user"), outcome
