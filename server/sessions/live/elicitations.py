"""Elicitations (ACP ``elicitation/create``), one kind of question
(``server.sessions.live.questions``): the agent asks for a form (``requestedSchema``) or for a
visit to a URL; a person accepts (a form with content that matches the schema), declines
or cancels, the first answer winning."""

from __future__ import annotations

import logging
import uuid
from typing import Any
from urllib.parse import urlsplit

from agent_bridge import RpcError
from agent_bridge.jsonrpc import INVALID_PARAMS
from agent_bridge.jsontypes import JsonObject
from server.contents import ElicitationContent, as_json
from server.sessions.errors import Invalid
from server.sessions.live.elicitation_form import check_content, schema_problem
from server.sessions.live.pending import PendingRequest, RequestKind
from server.sessions.live.translate import Output, Translator
from server.sessions.live.turn import Turn

__all__ = ["ACTIONS", "ELICITATION", "elicitation_asked", "elicitation_outcome"]

log = logging.getLogger("agent_sessions.session")

ACTIONS = ("accept", "decline", "cancel")
MODES = ("form", "url")

ELICITATION = RequestKind(
    name="elicitation",
    answered_code="elicitation_already_answered",
    answered_message="This elicitation was already answered.",
    cancelled={"action": "cancel"},
    on_timeout=lambda _pending: {"action": "cancel"},
)


def _refuse(message: str) -> RpcError:
    log.info("elicitation refused: %s", message)
    return RpcError(INVALID_PARAMS, message)


def _web_url(url: Any) -> bool:
    try:
        parts = urlsplit(url) if isinstance(url, str) else None
    except ValueError:  # e.g. a malformed IPv6 host
        return False
    return parts is not None and parts.scheme in ("http", "https") and bool(parts.netloc)


def elicitation_asked(
    params: JsonObject, raw: JsonObject, translator: Translator, turn: Turn | None
) -> tuple[PendingRequest, list[Output], bool]:
    """The question, the messages that ask it, and whether its mode is one we show.
    A malformed request is refused to the agent (RpcError), never stored."""
    mode = params.get("mode")
    if not isinstance(mode, str):
        raise _refuse("mode must be a string")
    schema, url = params.get("requestedSchema"), params.get("url")
    if mode == "form" and (problem := schema_problem(schema)) is not None:
        raise _refuse(problem)
    if mode == "url" and not _web_url(url):
        raise _refuse("url must be an http or https URL")
    call_id = params.get("toolCallId")
    message = params.get("message")
    request_id = str(uuid.uuid4())
    content: ElicitationContent = {
        "type": "elicitation",
        "requestId": request_id,
        "mode": mode,
        "message": message if isinstance(message, str) else "",
        "requestedSchema": schema if mode == "form" else None,
        "url": url if mode == "url" else None,
        "outcome": None,
    }
    pending = PendingRequest(
        ELICITATION,
        request_id,
        turn.run_id if turn else None,
        call_id if isinstance(call_id, str) and turn is not None else None,
        as_json(content),
    )
    outputs = translator.flush()
    outputs.append(Output("system", content, raw))
    return pending, outputs, mode in MODES


def elicitation_outcome(asked: JsonObject, action: str, content: Any) -> JsonObject:
    """The outcome an answer makes, checked against what was asked."""
    if action not in ACTIONS:
        raise Invalid("action must be one of accept, decline, cancel.", field="action")
    if action != "accept" or asked["mode"] != "form":
        if content is not None:
            raise Invalid("content is taken only with action accept on a form.", field="content")
        return {"action": action}
    schema = asked["requestedSchema"]
    return {
        "action": "accept",
        "content": check_content(schema, {} if content is None else content),
    }
