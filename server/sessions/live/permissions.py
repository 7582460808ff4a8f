"""Permission requests (ACP ``session/request_permission``), one kind of question
(``server.sessions.live.questions``): the agent asks about a tool call, a person picks one of
the offered options (the first answer wins) or the timeout rejects (fail closed)."""

from __future__ import annotations

import uuid

from agent_bridge.jsontypes import JsonObject
from server import metrics
from server.contents import PermissionContent, as_json
from server.sessions.errors import Invalid
from server.sessions.live.pending import PendingRequest, RequestKind
from server.sessions.live.translate import Output, Translator
from server.sessions.live.turn import Turn
from store import utcnow
from store.operations import DecidePermission, InsertPermission

__all__ = ["PERMISSION", "chosen_option", "permission_asked"]


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
    observe_wait=metrics.observe_permission_wait,
)


def permission_asked(
    params: JsonObject,
    raw: JsonObject,
    translator: Translator,
    session_id: str,
    turn: Turn | None,
) -> tuple[PendingRequest, list[Output], list[InsertPermission]]:
    """The question, the messages that ask it (the tool call as it stands, then the
    request) and the op that stores it in the permissions table."""
    raw_call = params.get("toolCall")
    tool_call: JsonObject = raw_call if isinstance(raw_call, dict) else {}
    call_id = str(tool_call.get("toolCallId", ""))
    options = [o for o in params.get("options") or [] if isinstance(o, dict)]
    request_id = str(uuid.uuid4())
    outputs = translator.flush()
    tool_content = translator.merge_tool(call_id, tool_call)
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
    asked = InsertPermission(request_id, session_id, run_id, call_id, content["options"], utcnow())
    return pending, outputs, [asked]


def chosen_option(pending: PendingRequest, option_id: str) -> JsonObject:
    """A person's choice, one of the offered options (else 422)."""
    if option_id not in {o.get("optionId") for o in pending.content["options"]}:
        raise Invalid(f"optionId {option_id!r} is not one of the offered options.")
    return {"outcome": "selected", "optionId": option_id}
