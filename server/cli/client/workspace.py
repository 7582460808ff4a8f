"""The chat's workspace commands, answered by the server's REST API rather than the
agent: ``/diff`` (the session's changes: files, then the patch), ``/commit MSG`` and
``/merge [BRANCH]``."""

from __future__ import annotations

import anyio

from server.cli.client.api import Api, CliError
from server.cli.client.wire import JsonObject

__all__ = ["COMMANDS", "run_command"]

COMMANDS = ("/diff", "/commit", "/merge")
_MARKS = {"added": "A", "modified": "M", "deleted": "D", "renamed": "R"}


def _files(files: list[JsonObject]) -> list[str]:
    lines = []
    for f in files:
        name = f"{f['oldPath']} -> {f['path']}" if f.get("oldPath") else f["path"]
        counts = "binary" if f.get("binary") else f"+{f['additions']} -{f['deletions']}"
        lines.append(f"  {_MARKS.get(f['status'], '?')} {name}  {counts}")
    return lines


def _diff(api: Api, session_id: str) -> str:
    found = api.call("GET", f"/api/sessions/{session_id}/changes")
    if not found["files"]:
        return "no changes since the session's base commit"
    out = [f"{len(found['files'])} file(s) changed since {str(found['baseCommit'])[:12]}:"]
    out += _files(found["files"])
    out.append(found["patch"].rstrip("\n"))
    if found["truncated"]:
        out.append("(the patch was cut at the server's MAX_DIFF_BYTES)")
    return "\n".join(out)


def _commit(api: Api, session_id: str, message: str) -> str:
    if not message:
        raise CliError("usage: /commit MESSAGE")
    made = api.call("POST", f"/api/sessions/{session_id}/commit", json={"message": message})
    return "\n".join([f"committed {made['commit'][:12]}:", *_files(made["files"])])


def _merge(api: Api, session_id: str, into: str) -> str:
    body = {"into": into} if into else {}
    merged = api.call("POST", f"/api/sessions/{session_id}/merge", json=body)
    return f"merged into {merged['into']} as {merged['commit'][:12]}"


def _run(api: Api, session_id: str, name: str, rest: str) -> str:
    if name == "/diff":
        return _diff(api, session_id)
    if name == "/commit":
        return _commit(api, session_id, rest)
    return _merge(api, session_id, rest)


async def run_command(api: Api, session_id: str, text: str) -> str | None:
    """The answer to a workspace command (None: ``text`` is not one). A refusal is
    answered in words, not raised: the chat goes on."""
    name, _, rest = text.strip().partition(" ")
    if name not in COMMANDS:
        return None
    try:
        return await anyio.to_thread.run_sync(_run, api, session_id, name, rest.strip())
    except CliError as exc:
        return str(exc)
