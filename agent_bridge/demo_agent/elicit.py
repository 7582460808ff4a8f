"""The demo agent's questions to the person (ACP ``elicitation/create``, asked only when
the client advertised the mode): the form before ``save`` writes a file, and the
``elicit`` command that asks any form, a URL visit, or a mode the client does not know."""

from __future__ import annotations

import json
import os

from .turn import Turn
from .wire import JsonObject, RemoteError

__all__ = ["ask", "choose_file", "elicit_body", "save_schema"]


def save_schema(relpath: str) -> JsonObject:
    return {
        "type": "object",
        "title": "Save a file",
        "properties": {
            "path": {
                "type": "string",
                "title": "File name",
                "description": "Where to save, relative to the workspace",
                "default": relpath,
                "minLength": 1,
            },
            "overwrite": {
                "type": "boolean",
                "title": "Replace the file if it exists",
                "default": False,
            },
        },
        "required": ["path"],
    }


async def ask(turn: Turn, params: JsonObject) -> JsonObject:
    """One elicitation/create; the client's answer (``{"action": ...}``)."""
    try:
        answer = await turn.request("elicitation/create", params)
    except RemoteError as exc:
        return {"action": "error", "error": exc.message}
    return answer if isinstance(answer, dict) else {"action": "error", "error": repr(answer)}


async def choose_file(turn: Turn, relpath: str) -> tuple[str, str | None] | None:
    """The form before a risky write: (path to write, None), or (relpath, why not);
    None when the person cancelled (the turn ends cancelled)."""
    answer = await ask(
        turn,
        {
            "mode": "form",
            "message": f"Save {relpath}? Choose the file name.",
            "requestedSchema": save_schema(relpath),
        },
    )
    action = answer.get("action")
    if action == "cancel":
        return None
    if action != "accept":
        return relpath, "declined by user" if action == "decline" else str(answer)
    given = answer.get("content")
    content: JsonObject = given if isinstance(given, dict) else {}
    path = content.get("path")
    chosen = path if isinstance(path, str) and path else relpath
    if _exists(os.path.join(turn.cwd, chosen)) and content.get("overwrite") is not True:
        return chosen, "it exists and replacing it was not chosen"
    return chosen, None


def _exists(path: str) -> bool:
    return os.path.lexists(path)


async def elicit_body(turn: Turn, mode: str, argument: str) -> list[str]:
    """``elicit form <schema json>`` / ``elicit url <url>`` / ``elicit <other mode>``:
    ask, then report the answer."""
    if mode == "form" and not turn.client.elicitation_form:
        return ["The client takes no elicitation forms."]
    if mode == "url" and not turn.client.elicitation_url:
        return ["The client takes no URL elicitations."]
    params: JsonObject = {"mode": mode, "message": f"The demo agent asks ({mode})."}
    if mode == "form":
        try:
            params["requestedSchema"] = json.loads(argument)
        except ValueError:
            return ["elicit form needs a JSON schema."]
    elif mode == "url":
        params.update(url=argument, elicitationId=f"demo-{turn.session.id}")
    answer = await ask(turn, params)
    shown = {k: v for k, v in answer.items() if k != "_meta"}
    return ["Elicitation answer: " + json.dumps(shown, sort_keys=True)]
