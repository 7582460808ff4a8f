"""A live session's permission requests: the agent asks, a person answers (the first
answer wins) or the timeout rejects; every outcome is stored and published (the waiting,
timeout and cancelling are ``server.sessions.pending``'s, shared with elicitations)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable

import anyio

from agent_bridge.jsontypes import JsonObject
from server import metrics
from server.contents import PermissionContent, as_json
from server.sessions.errors import Invalid
from server.sessions.live_base import LiveBase
from server.sessions.pending import PendingRequest, RequestKind
from server.sessions.translate import Output
from store import utcnow
from store.operations import DecidePermission, InsertPermission

__all__ = ["PERMISSION", "PermissionGate"]


def _reject_or_cancel(pending: PendingRequest) -> JsonObject:
    """A timeout picks the agent's reject option (fail closed), else ``cancelled``."""
    reject = next(
        (
            o
            for o in pending.content["options"]
            if o.get("kind") in ("reject_once", "reject_always")
        ),
        None,
    )
    if reject is None:
        return {"outcome": "cancelled"}
    return {"outcome": "selected", "optionId": reject["optionId"]}


PERMISSION = RequestKind(
    name="permission",
    answered_code="permission_already_decided",
    answered_message="This permission request was already answered.",
    cancelled={"outcome": "cancelled"},
    on_timeout=_reject_or_cancel,
    record=DecidePermission,
    observe_wait=metrics.PERMISSION_WAIT_SECONDS.observe,
)


class PermissionGate(LiveBase):
    async def on_permission_request(
        self, params: JsonObject, raw: JsonObject
    ) -> Awaitable[JsonObject]:
        turn = self.turn
        raw_call = params.get("toolCall")
        tool_call: JsonObject = raw_call if isinstance(raw_call, dict) else {}
        call_id = str(tool_call.get("toolCallId", ""))
        options = [o for o in params.get("options") or [] if isinstance(o, dict)]
        request_id = str(uuid.uuid4())
        outputs = self.translator.flush()
        tool_content = self.translator.merge_tool(call_id, tool_call)
        outputs.append(Output("system", tool_content))
        content: PermissionContent = {
            "type": "permission",
            "requestId": request_id,
            "toolCallId": call_id,
            "tool": tool_content["tool"],
            "options": [
                {"optionId": o.get("optionId"), "name": o.get("name"), "kind": o.get("kind")}
                for o in options
            ],
            "outcome": None,
        }
        outputs.append(Output("system", content, raw))
        run_id = turn.run_id if turn else None
        pending = PendingRequest(PERMISSION, request_id, run_id, call_id, as_json(content))
        asked = InsertPermission(request_id, self.id, run_id, call_id, content["options"], utcnow())
        self._ask(pending, outputs, [asked])
        if turn is not None and turn.over_budget() and not turn.paused:
            turn.paused = True
            self._tg_start(self._cancel_turn, turn)
        return self._wait(pending)

    def answer_permission(self, request_id: str, option_id: str) -> anyio.Event:
        """A person's answer; the first one wins. Returns the commit event."""
        pending = self._pending_of(PERMISSION, request_id)
        if option_id not in {o.get("optionId") for o in pending.content["options"]}:
            raise Invalid(f"optionId {option_id!r} is not one of the offered options.")
        return self._decide(pending, {"outcome": "selected", "optionId": option_id}, "user")
