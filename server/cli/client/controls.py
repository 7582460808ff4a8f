"""The chat's control commands, answered by the server's REST API: ``/mode`` (list the
agent's modes, or ``/mode ID`` to switch) and ``/config`` (list the options, or
``/config ID VALUE`` to set one)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import anyio

from server.cli.client.api import Api, CliError
from server.cli.client.wire import JsonObject

__all__ = ["COMMANDS", "Attachments", "run_command"]

COMMANDS = ("/mode", "/config")


def _modes(controls: JsonObject) -> str:
    modes = controls.get("modes")
    if not modes or not modes.get("available"):
        return "this agent offers no modes"
    current = modes.get("currentModeId")
    lines = ["modes (/mode ID to switch):"]
    for m in modes["available"]:
        mark = "*" if m["id"] == current else " "
        lines.append(
            f" {mark} {m['id']}  {m['name']}"
            + (f": {m['description']}" if m.get("description") else "")
        )
    return "\n".join(lines)


def _options(controls: JsonObject) -> str:
    if not controls.get("config"):
        return "this agent offers no config options"
    lines = ["config options (/config ID VALUE to set):"]
    for o in controls["config"]:
        values = ", ".join(str(c["value"]) for c in o["options"]) or "true, false"
        lines.append(f"  {o['id']} = {o['currentValue']}  ({values})")
    return "\n".join(lines)


def _value(text: str) -> Any:
    return {"true": True, "false": False}.get(text, text)


def _run(api: Api, session_id: str, name: str, rest: str) -> str:
    base = f"/api/sessions/{session_id}"
    words = rest.split()
    if name == "/mode":
        if not words:
            return _modes(api.call("GET", f"{base}/controls"))
        changed = api.call("PUT", f"{base}/mode", json={"modeId": words[0]})
        return f"mode: {changed['modes']['currentModeId']}"
    if not words:
        return _options(api.call("GET", f"{base}/controls"))
    if len(words) != 2:
        raise CliError("usage: /config ID VALUE")
    changed = api.call("PUT", f"{base}/config/{words[0]}", json={"value": _value(words[1])})
    option = next(o for o in changed["config"] if o["id"] == words[0])
    return f"{option['id']}: {option['currentValue']}"


async def run_command(api: Api, session_id: str, text: str) -> str | None:
    """The answer to a control command (None: ``text`` is not one). A refusal is
    answered in words: the chat goes on."""
    name, _, rest = text.strip().partition(" ")
    if name not in COMMANDS:
        return None
    try:
        return await anyio.to_thread.run_sync(_run, api, session_id, name, rest.strip())
    except CliError as exc:
        return str(exc)


_IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}


class Attachments:
    """``/attach PATH``: the next prompt carries it. An image on this machine goes as its
    bytes; any other path is a file of the session's workspace (checked by the server)."""

    def __init__(self) -> None:
        self.pending: list[JsonObject] = []

    def command(self, text: str) -> str | None:
        name, _, rest = text.strip().partition(" ")
        if name != "/attach":
            return None
        path = rest.strip()
        if not path:
            return "usage: /attach PATH (an image, or a file of the workspace)"
        mime = _IMAGE_TYPES.get(Path(path).suffix.lower())
        if mime is not None and Path(path).is_file():
            data = base64.b64encode(Path(path).read_bytes()).decode()
            self.pending.append({"type": "image", "mimeType": mime, "data": data})
        else:
            self.pending.append({"type": "file", "path": path})
        return f"attached {path} to the next prompt ({len(self.pending)} pending)"

    def take(self) -> JsonObject:
        """The prompt's ``content`` (nothing when none is pending); clears the list."""
        pending, self.pending = self.pending, []
        return {"content": pending} if pending else {}
