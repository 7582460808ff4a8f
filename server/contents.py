"""The message contents of API.md ("Messages", "Agent controls", "Prompt content"), once,
as TypedDicts: what the session core composes and stores, what the views, transcript,
archive and history read back. Fields the agent filled in without a shape of ours
(a plan's entries, a tool's input and output, a usage's numbers, an update's data) are
``JsonValue``: any JSON from outside, narrowed where it is used.

A cross-cutting leaf, like ``server.shapes``: it imports nothing else from ``server``.
``as_json`` is the one place a typed shape becomes the plain JSON object the writer
(``server.stream.writer.Draft``), the store and the resources' Structs take."""

from collections.abc import Mapping
from typing import Literal, NotRequired, TypeAlias, TypedDict, cast

from agent_bridge.acp_types import PermissionOutcome
from agent_bridge.jsontypes import JsonObject, JsonValue
from server.shapes import ToolStatus

__all__ = [
    "Change",
    "ChangedBy",
    "Choice",
    "Command",
    "ConfigOption",
    "Content",
    "ControlsContent",
    "ControlsView",
    "Cost",
    "ElicitationContent",
    "ElicitationOutcome",
    "FileAttachment",
    "ImageAttachment",
    "Mode",
    "Modes",
    "PermissionContent",
    "PermissionOption",
    "PermissionOutcome",
    "PlanContent",
    "PromptCapabilities",
    "ReviewComment",
    "ReviewContent",
    "CommitContent",
    "MergeContent",
    "ClientToolContent",
    "RunContent",
    "StatusContent",
    "TextContent",
    "ToolContent",
    "UpdateContent",
    "UsageContent",
    "as_json",
]

Change = Literal["mode", "config", "commands"]
ChangedBy = Literal["agent", "client"]


# -- agent controls --------------------------------------------------------------------


class Mode(TypedDict):
    id: str
    name: str
    description: str | None


class Modes(TypedDict):
    currentModeId: str | None
    available: list[Mode]


class Choice(TypedDict):
    """One value a select option offers (groups flattened: each keeps its group)."""

    value: JsonValue  # the agent's value id, passed back to it as it came
    name: str
    description: str | None
    group: str | None


class ConfigOption(TypedDict):
    id: str
    name: str
    description: str | None
    category: str | None
    type: Literal["select", "boolean"]
    currentValue: JsonValue  # as the agent reports it (a value id, or true/false)
    options: list[Choice]


class Command(TypedDict):
    name: str
    description: str
    inputHint: str | None


class PromptCapabilities(TypedDict):
    image: bool
    audio: bool
    embeddedContext: bool


class ControlsView(TypedDict):
    """API.md ``Controls``."""

    modes: Modes | None
    config: list[ConfigOption]
    commands: list[Command]
    promptCapabilities: PromptCapabilities
    mcpServers: list[str | JsonObject]  # JsonObject: client-tools, not offered


# -- the stored user prompt's attachments (API.md "Prompt content") -------------------


class ImageAttachment(TypedDict):
    type: Literal["image"]
    mimeType: str
    size: int
    sha256: str
    url: str


class FileAttachment(TypedDict):
    type: Literal["file"]
    path: str
    line: int | None
    limit: int | None
    embedded: bool


# -- message contents (API.md "Messages": one per ``type``) ----------------------------


class ReviewComment(TypedDict):
    """A line comment of a review prompt (API.md, Review); ``text`` is the line quoted."""

    path: str
    line: int
    side: Literal["new", "old"]
    body: str
    text: str


class ReviewContent(TypedDict):
    """``review``: a change a person undid in review."""

    type: Literal["review"]
    action: Literal["revert"]
    path: str
    hunks: list[int] | None
    by: ChangedBy


class CommitContent(TypedDict):
    """``review`` with ``action: "commit"``: a person committed the worktree's changes on
    the session's branch; ``by`` is ``{id, name}`` (None without users)."""

    type: Literal["review"]
    action: Literal["commit"]
    commit: str
    branch: str
    files: list[str]
    by: JsonValue


class MergeContent(TypedDict):
    """``review`` with ``action: "merge"``: a person merged the session's branch."""

    type: Literal["review"]
    action: Literal["merge"]
    commit: str | None
    into: str
    strategy: str
    by: JsonValue


class ClientToolContent(TypedDict):
    """``client_tool``: a call of a client tool (API.md "Client tools"); ``outcome`` None
    while it waits, then ``answered``, ``timeout``, ``cancelled`` or ``server_restarted``
    (with ``by`` once answered)."""

    type: Literal["client_tool"]
    callId: str
    name: str
    input: JsonValue
    result: JsonValue
    isError: bool
    outcome: Literal["answered", "timeout", "cancelled", "server_restarted"] | None
    by: NotRequired[JsonValue]


class TextContent(TypedDict):
    """``text``: a user's prompt (``attachments`` when it had blocks) or the agent's text
    (``partial``: a chunk, or the whole message after them)."""

    type: Literal["text"]
    text: str
    partial: NotRequired[bool]
    attachments: NotRequired[list[ImageAttachment | FileAttachment]]
    comments: NotRequired[list[ReviewComment]]


class ThoughtContent(TypedDict):
    type: Literal["thought"]
    text: str
    partial: bool


class PlanContent(TypedDict):
    type: Literal["plan"]
    steps: JsonValue  # the agent's plan entries ({content, priority, status}), as sent


class ToolContent(TypedDict):
    """The merged state of a tool call so far."""

    type: Literal["tool"]
    toolCallId: str
    tool: str | None
    kind: str
    status: ToolStatus
    args: JsonValue  # the agent's rawInput
    result: JsonValue  # its rawOutput (or its content once finished)
    locations: list[JsonValue]
    content: list[JsonValue]


class PermissionOption(TypedDict):
    """As the agent offered it (``PermissionOption``); not checked, hence JsonValue."""

    optionId: JsonValue
    name: JsonValue
    kind: JsonValue


class PermissionContent(TypedDict):
    type: Literal["permission"]
    requestId: str
    toolCallId: str | None  # None only in a request stored without one (recovery)
    tool: str | None
    options: list[PermissionOption]
    outcome: PermissionOutcome | None
    reason: NotRequired[str]  # once decided: user, timeout, turn_ended, server_restarted, …


class StatusContent(TypedDict):
    type: Literal["status"]
    status: str
    reason: str
    detail: JsonObject  # e.g. {exitCode, stderrTail}; {} when there is nothing to add


class RunContent(TypedDict):
    type: Literal["run"]
    runId: str
    status: str
    stopReason: str | None
    durationMs: int | None


class Cost(TypedDict):
    amount: float
    currency: str | None


class UsageContent(TypedDict):
    type: Literal["usage"]
    used: JsonValue  # as the agent reported them (usage_update)
    size: JsonValue
    cost: JsonValue


class ControlsContent(TypedDict):
    type: Literal["controls"]
    change: Change
    by: ChangedBy
    controls: ControlsView


class ElicitationOutcome(TypedDict):
    """``{action: "accept", content}``, ``{action: "decline"}`` or ``{action: "cancel"}``."""

    action: Literal["accept", "decline", "cancel"]
    content: NotRequired[JsonObject]  # the form's answer, checked against requestedSchema


class ElicitationContent(TypedDict):
    """API.md "Agent controls", Elicitation (ACP ``elicitation/create``)."""

    type: Literal["elicitation"]
    requestId: str
    mode: str
    message: str
    requestedSchema: JsonObject | None  # the agent's JSON Schema for a form
    url: str | None
    outcome: ElicitationOutcome | None


class UpdateContent(TypedDict):
    type: Literal["update"]
    sessionUpdate: JsonValue  # the ACP sessionUpdate kind we have no message type for
    data: JsonObject  # the rest of the update, as sent


Content: TypeAlias = (
    TextContent
    | ThoughtContent
    | PlanContent
    | ToolContent
    | PermissionContent
    | StatusContent
    | RunContent
    | UsageContent
    | ControlsContent
    | ElicitationContent
    | ReviewContent
    | ClientToolContent
    | UpdateContent
)


def as_json(value: Mapping[str, object]) -> JsonObject:
    """A typed shape (a content, the controls) as the plain JSON object the writer, the
    store and the Structs take: the same object, no copy."""
    return cast(JsonObject, value)
