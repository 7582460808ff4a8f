"""The agent's questions (``elicitation`` messages) in ``agent-sessions chat``: a form is
asked field by field (its title, the default in brackets; Enter keeps the default or
leaves an optional field out), a URL is shown to visit; ``!decline`` or ``!cancel`` at any
prompt answers so. The answer goes as the WebSocket ``elicitation`` command.

A client tool call (``client_tool`` messages) shows its tool and input and takes the
result as JSON, or ``!`` and a message to answer it as an error (the WebSocket
``client_tool_result`` command)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from server.cli.client.wire import JsonObject

__all__ = ["ask_client_tool", "ask_elicitation"]

Ask = Callable[[str], Awaitable[str | None]]
Say = Callable[[str], None]
_ACTIONS = {"!decline": "decline", "!cancel": "cancel"}


async def ask_elicitation(content: JsonObject, ask: Ask, say: Say) -> JsonObject:
    """The ``elicitation`` command that answers ``content`` (``cancel`` at end of input)."""
    command: JsonObject = {"type": "elicitation", "requestId": content["requestId"]}
    say(f"? the agent asks: {content.get('message') or 'some input'}")
    if content.get("mode") == "url":
        say(f"  open {content.get('url')}")
        answer = await ask("press Enter once done (or !decline, !cancel): ")
        return {**command, "action": _action(answer)}
    schema = content.get("requestedSchema") or {}
    properties = schema.get("properties") if isinstance(schema, dict) else None
    required = set(schema.get("required") or []) if isinstance(schema, dict) else set()
    values: JsonObject = {}
    for name, prop in (properties or {}).items():
        prop = prop if isinstance(prop, dict) else {}
        while True:
            answer = await ask(_prompt(name, prop, name in required))
            if answer is None or answer.strip() in _ACTIONS:
                return {**command, "action": _action(answer)}
            value, problem = _value(answer.strip(), prop, name in required)
            if problem is None:
                break
            say(f"  {problem}")
        if value is not None:
            values[name] = value
    return {**command, "action": "accept", "content": values}


async def ask_client_tool(content: JsonObject, ask: Ask, say: Say) -> JsonObject:
    """The ``client_tool_result`` command that answers the call ``content`` (an error
    answer at end of input)."""
    command: JsonObject = {"type": "client_tool_result", "callId": content["callId"]}
    say(f"? the agent waits on a client: tool {content.get('name')}")
    say("  input: " + json.dumps(content.get("input"), ensure_ascii=False))
    while True:
        answer = await ask("  result as JSON (or ! and a message to answer as an error): ")
        if answer is None or answer.strip().startswith("!"):
            text = (answer or "").strip()[1:].strip() or "The person gave no answer."
            return {**command, "isError": True, "content": [{"type": "text", "text": text}]}
        try:
            return {**command, "result": json.loads(answer)}
        except ValueError:
            say('  that is not JSON (a text needs quotes: "like this")')


def _action(answer: str | None) -> str:
    if answer is None:
        return "cancel"
    return _ACTIONS.get(answer.strip(), "accept")


def _prompt(name: str, prop: JsonObject, required: bool) -> str:
    label = str(prop.get("title") or name)
    choices = prop.get("enum")
    if isinstance(choices, list):
        label += " (" + " / ".join(str(c) for c in choices) + ")"
    elif prop.get("type") == "boolean":
        label += " (y/n)"
    default = prop.get("default")
    if default is not None:
        label += f" [{'y' if default is True else 'n' if default is False else default}]"
    return f"  {label}{' *' if required else ''}: "


def _value(answer: str, prop: JsonObject, required: bool) -> tuple[Any, str | None]:
    """The typed value of one answer, or why it is not one."""
    if not answer:
        if "default" in prop:
            return prop["default"], None
        return None, "this field is required" if required else None
    kind = prop.get("type")
    choices = prop.get("enum")
    if isinstance(choices, list):
        found = next((c for c in choices if str(c) == answer), None)
        return (found, None) if found is not None else (None, "choose one of the listed values")
    if kind == "boolean":
        if answer.lower() in ("y", "yes", "true"):
            return True, None
        if answer.lower() in ("n", "no", "false"):
            return False, None
        return None, "answer y or n"
    if kind in ("integer", "number"):
        try:
            return (int(answer) if kind == "integer" else float(answer)), None
        except ValueError:
            return None, f"type a{'n integer' if kind == 'integer' else ' number'}"
    return answer, None
