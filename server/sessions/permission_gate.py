"""A live session's permission requests: the agent asks, a person answers (the first
answer wins) or the timeout rejects; every outcome is stored and published."""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable
from typing import Any

import anyio

from agent_bridge.jsontypes import JsonObject
from server import metrics
from server.contents import PermissionContent, PermissionOutcome
from server.sessions.errors import Conflict, Invalid, NotFound
from server.sessions.live_base import LiveBase
from server.sessions.translate import Output
from server.sessions.turn import PendingPermission
from store import permissions as permission_store
from store import utcnow

__all__ = ["PermissionGate"]


class PermissionGate(LiveBase):
    async def on_permission_request(
        self, params: JsonObject, raw: JsonObject
    ) -> Awaitable[PermissionOutcome]:
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
        pending = PendingPermission(request_id, turn.run_id if turn else None, call_id, content)
        self.permissions[request_id] = pending
        if turn is not None:
            turn.tools.permission_asked(call_id)
        drafts, ops = self._stage(outputs, turn)

        async def insert_permission(db: Any) -> None:
            await permission_store.insert_permission(
                db, request_id, self.id, pending.run_id, call_id, content["options"], utcnow()
            )

        self.services.writer.submit(self.id, drafts, [*ops, insert_permission])
        if turn is not None and turn.over_budget() and not turn.paused:
            turn.paused = True
            self._tg_start(self._cancel_turn, turn)
        return self._wait_permission(pending)

    async def _wait_permission(self, pending: PendingPermission) -> PermissionOutcome:
        with anyio.move_on_after(self.services.settings.permission_timeout):
            await pending.decided.wait()
        if not pending.decided.is_set():
            reject = next(
                (
                    o
                    for o in pending.content["options"]
                    if o.get("kind") in ("reject_once", "reject_always")
                ),
                None,
            )
            outcome: PermissionOutcome = (
                {"outcome": "selected", "optionId": reject["optionId"]}
                if reject
                else {"outcome": "cancelled"}
            )
            self._decide(pending, outcome, "timeout")
        metrics.PERMISSION_WAIT_SECONDS.observe(time.monotonic() - pending.asked)
        return pending.outcome or {"outcome": "cancelled"}

    def answer_permission(self, request_id: str, option_id: str) -> anyio.Event:
        """A person's answer; the first one wins. Returns the commit event."""
        pending = self.permissions.get(request_id)
        if pending is None:
            raise NotFound(
                "permission",
                request_id,
                f"No pending permission request {request_id}.",
                details={},
            )
        if pending.decided.is_set():
            raise Conflict(
                "permission_already_decided", "This permission request was already answered."
            )
        if option_id not in {o.get("optionId") for o in pending.content["options"]}:
            raise Invalid(f"optionId {option_id!r} is not one of the offered options.")
        return self._decide(pending, {"outcome": "selected", "optionId": option_id}, "user")
