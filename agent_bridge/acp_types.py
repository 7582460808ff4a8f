"""The ACP shapes this client writes (its requests' params, its answers to the agent)
as TypedDicts. What the agent sends is ``JsonObject`` (``agent_bridge.jsontypes``): it is
someone else's JSON, checked field by field where it is read."""

from typing import Literal, NotRequired, TypedDict

from agent_bridge.jsontypes import JsonObject

__all__ = [
    "ContentBlock",
    "CreateTerminalResult",
    "EmptyResult",
    "McpServer",
    "PermissionOutcome",
    "ReadTextFileResult",
    "TerminalExitStatus",
    "TerminalOutputResult",
    "TerminalResult",
]

ContentBlock = JsonObject
"""An ACP ``ContentBlock`` (text, image, resource, resource_link) sent in a prompt."""

McpServer = JsonObject
"""An ACP ``McpServer`` (stdio: name, command, args, env; http/sse: type, name, url,
headers) as the server's catalog builds it; its env and headers hold secrets."""


class PermissionOutcome(TypedDict):
    """ACP ``RequestPermissionOutcome``: ``{outcome: "selected", optionId}`` or
    ``{outcome: "cancelled"}`` (also the ``outcome`` of API.md's permission message)."""

    outcome: Literal["selected", "cancelled"]
    optionId: NotRequired[str]


class ReadTextFileResult(TypedDict):
    content: str


class EmptyResult(TypedDict):
    """An answer with nothing to say (``fs/write_text_file``)."""


class TerminalExitStatus(TypedDict):
    exitCode: int | None
    signal: str | None


class CreateTerminalResult(TypedDict):
    terminalId: str


class TerminalOutputResult(TypedDict):
    output: str
    truncated: bool
    exitStatus: NotRequired[TerminalExitStatus]


TerminalResult = CreateTerminalResult | TerminalOutputResult | TerminalExitStatus | EmptyResult
"""What a ``terminal/*`` method answers."""
