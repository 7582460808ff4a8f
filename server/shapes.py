"""The shapes of API.md, once: the enums and the resources (Session, Message, Run,
ToolCall, Repo) as msgspec Structs. The views encode through them, the OpenAPI
components are generated from them (``server.web.openapi.schemas``), and so is the UI's
enum module (``server/web/static/enums.js``, ``python -m server.web.ui_enums``).

A cross-cutting leaf, like ``server.settings``: it imports nothing from ``server``."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

import msgspec

from agent_bridge.jsontypes import JsonObject

__all__ = [
    "MESSAGE_TYPES",
    "ROLES",
    "RUN_STATUSES",
    "SESSION_STATUSES",
    "TOOL_STATUSES",
    "CommitBody",
    "ConfigBody",
    "ConfigValue",
    "CreateSession",
    "ForkBody",
    "ForkedFrom",
    "ISOLATIONS",
    "VISIBILITIES",
    "Isolation",
    "Message",
    "MergeBody",
    "MessageType",
    "ModeBody",
    "ElicitationAnswer",
    "ElicitationCommand",
    "PermissionAnswer",
    "PermissionCommand",
    "PromptBody",
    "RegisterRepo",
    "Repo",
    "ResumeBody",
    "RewindBody",
    "Role",
    "Run",
    "RunStatus",
    "Session",
    "SetConfigCommand",
    "SessionStatus",
    "ToolCall",
    "ToolStatus",
    "Merged",
    "Workspace",
]

SessionStatus = Literal["active", "completed", "cancelled", "error"]
RunStatus = Literal[
    "queued", "running", "completed", "failed", "cancelled", "paused", "interrupted"
]
ToolStatus = Literal["pending", "in_progress", "completed", "error", "cancelled"]
Role = Literal["user", "agent", "system"]
Isolation = Literal["none", "worktree"]
Visibility = Literal["team", "private"]  # API.md "Users and access"
MessageType = Literal[
    "text",
    "thought",
    "plan",
    "tool",
    "permission",
    "status",
    "run",
    "usage",
    "controls",
    "elicitation",
    "client_tool",
    "review",
    "update",
]

SESSION_STATUSES: tuple[str, ...] = get_args(SessionStatus)
RUN_STATUSES: tuple[str, ...] = get_args(RunStatus)
TOOL_STATUSES: tuple[str, ...] = get_args(ToolStatus)
ROLES: tuple[str, ...] = get_args(Role)
MESSAGE_TYPES: tuple[str, ...] = get_args(MessageType)
ISOLATIONS: tuple[str, ...] = get_args(Isolation)
VISIBILITIES: tuple[str, ...] = get_args(Visibility)

Uuid = Annotated[str, msgspec.Meta(extra_json_schema={"format": "uuid"})]
Time = Annotated[str, msgspec.Meta(extra_json_schema={"format": "date-time"})]
Count = Annotated[int, msgspec.Meta(ge=0)]
# Not blank to the server: Python's str.strip() also strips \x1c-\x1f and \x85, which
# JSON Schema's \s does not cover.
NonBlank = Annotated[str, msgspec.Meta(pattern="[^\\s\\x1c-\\x1f\\x85]")]
Seq = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]


class _Shape(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    """camelCase on the wire; times are ISO 8601 UTC strings with a Z (``frames.iso``)."""


class Repo(_Shape):
    id: Uuid
    name: str
    path: str
    is_git_repo: bool
    created_at: Time


class ForkedFrom(_Shape):
    session_id: Uuid
    seq: Count


class Merged(_Shape):
    """The session's branch went into ``into`` as ``commit`` at ``at``."""

    commit: str | None
    into: str
    at: str


class Workspace(_Shape):
    """Where the session's agent works: the repository itself, or its own git worktree."""

    path: str
    isolation: Isolation
    branch: str | None
    base_ref: str | None
    base_commit: str | None
    merged: Merged | None


class Sandbox(_Shape):
    """API.md "Agent sandbox": whether the session's agent runs walled in, its network."""

    enabled: bool
    network: Literal["open", "none", "proxy"]


class Owner(msgspec.Struct, rename="camel"):
    """A user as ``Session.owner`` and ``by`` name them (API.md "Users and access")."""

    id: Uuid
    name: str


TitleSource = Literal["user", "agent", "prompt"]


class SessionUsage(_Shape):
    """A session's runs summed: tokens, and the cost the agent reported in US dollars."""

    input_tokens: Count
    output_tokens: Count
    cost_usd: float


class SessionMatch(_Shape):
    """Why a session matched ``q``: its best message (``seq``; null when only the title
    matched) and a snippet with each matched word between U+E000 and U+E001."""

    seq: Annotated[int, msgspec.Meta(ge=1)] | None
    snippet: str


class Session(msgspec.Struct, rename="camel"):
    id: Uuid
    repo_id: Uuid
    repo: Repo
    agent_id: str
    status: SessionStatus
    title: str | None
    created_at: Time
    updated_at: Time
    last_seq: Count
    active_run_id: Uuid | None
    parent_run_id: Uuid | None
    forked_from: ForkedFrom | None
    metadata: JsonObject
    workspace: Workspace
    controls: JsonObject  # API.md "Agent controls" (server.sessions.live.controls_state)
    sandbox: Sandbox
    owner: Owner | None = None  # null for sessions made before users existed
    visibility: Visibility = "team"
    title_source: TitleSource | None = None
    archived: bool = False
    last_activity_at: Time | None = None
    # API.md "Finding and keeping sessions": on listed sessions (and a single one)
    run_count: Count | msgspec.UnsetType = msgspec.UNSET
    usage: SessionUsage | msgspec.UnsetType = msgspec.UNSET
    match: SessionMatch | msgspec.UnsetType = msgspec.UNSET


class Message(msgspec.Struct, rename="camel"):
    """``raw`` and ``dropped`` are there only with the raw frame (export, ``raw=true``)."""

    id: Uuid
    session_id: Uuid
    run_id: Uuid | None
    seq: Annotated[int, msgspec.Meta(ge=1)]
    role: Role
    content: JsonObject
    step_number: int | None
    timestamp: Time
    raw: Annotated[
        Any,
        msgspec.Meta(description="The raw ACP frame (only with raw=true and on single messages)."),
    ] = msgspec.UNSET
    dropped: Annotated[
        bool | msgspec.UnsetType,
        msgspec.Meta(description="Dropped by a rewind (only with the raw frame)."),
    ] = msgspec.UNSET


class Run(msgspec.Struct, rename="camel"):
    id: Uuid
    session_id: Uuid
    repo_id: Uuid
    agent_id: str
    status: RunStatus
    stop_reason: str | None
    step_count: Count
    max_steps: Count
    parent_run_id: Uuid | None
    resumed_from: Uuid | None
    summary: str | None
    error_message: str | None
    usage: JsonObject | None
    cost: JsonObject | None
    duration_ms: int | None
    created_at: Time
    completed_at: Time | None
    user_id: Uuid | None = None  # who prompted it (API.md "Users and access")


class ToolCall(msgspec.Struct, rename="camel"):
    id: Uuid
    run_id: Uuid
    message_id: Uuid | None
    tool_call_id: str
    tool_name: str | None
    kind: str | None
    input: Any
    output: Any
    status: ToolStatus
    duration_ms: int | None
    step_number: int | None
    created_at: Time
    completed_at: Time | None


# -- request bodies (what the server accepts; server.web.bodies decodes them) ------------
# Fields are in the order they are checked (the first bad one is reported); ``invalid`` is
# the sentence for a value of the wrong type (server.web.bodies has the others).


class _Body(msgspec.Struct, rename="camel"):
    pass


def _invalid(sentence: str, **meta: Any) -> msgspec.Meta:
    return msgspec.Meta(extra={"invalid": sentence}, **meta)


class RegisterRepo(_Body):
    path: Annotated[
        NonBlank, msgspec.Meta(description="Relative to the workspace root, or absolute.")
    ]
    name: NonBlank | None = None


class CreateSession(_Body):
    repo_id: Uuid
    agent_id: NonBlank | None = None
    title: str | None = None
    parent_run_id: Uuid | None = None
    mode_id: NonBlank | None = None  # API.md "Agent controls": applied after session/new
    config: dict[str, str | bool] | None = None
    # API.md "Agent controls", MCP servers: AGENTS_FILE names added to the agent's defaults
    mcp_servers: list[NonBlank] | None = None
    isolation: Annotated[Isolation, _invalid("isolation must be none or worktree.")] | None = None
    base_ref: NonBlank | None = None
    visibility: Annotated[Visibility, _invalid("visibility must be team or private.")] | None = None
    # API.md "Client tools": the session's first set (checked as PUT checks it)
    client_tools: list[JsonObject] | None = None


class PatchSession(_Body):
    """API.md "Finding and keeping sessions": rename, share, archive."""

    title: Annotated[NonBlank, msgspec.Meta(max_length=500)] | None = None
    visibility: (
        Annotated[Literal["team", "private"], _invalid("visibility must be team or private.")]
        | None
    ) = None
    archived: bool | None = None


class PromptBody(_Body):
    """``text`` and/or ``content`` (API.md "Prompt content": text, image, file blocks)."""

    content: list[JsonObject] | None = None
    text: NonBlank | None = None
    queue: bool | None = None  # wait for the running turn instead of 409 turn_in_progress


class PermissionAnswer(_Body):
    option_id: NonBlank


ElicitationAction = Annotated[
    Literal["accept", "decline", "cancel"],
    _invalid("action must be one of accept, decline, cancel."),
]


class ElicitationAnswer(_Body):
    action: ElicitationAction
    content: Annotated[
        JsonObject | None,
        msgspec.Meta(
            description="With accept on a form: the answer, matching the requestedSchema "
            "(else 422 and the request stays pending)."
        ),
    ] = None


class ElicitationCommand(_Body):  # the WebSocket twin of ElicitationAnswer
    request_id: NonBlank  # a UUID, checked after the answer (as it always was)
    action: ElicitationAction
    content: JsonObject | None = None


class ForkBody(_Body):
    upto_seq: Seq | None = None
    title: str | None = None


class RewindBody(_Body):
    to_seq: Seq
    restore_files: (
        Annotated[bool, _invalid("restoreFiles must be true or false.")] | msgspec.UnsetType
    ) = msgspec.UNSET


class ResumeBody(_Body):
    max_steps: (
        Annotated[
            int,
            _invalid(
                "maxSteps must be a positive integer.",
                ge=1,
                description="Capped by MAX_TOTAL_STEPS_PER_RUN.",
            ),
        ]
        | msgspec.UnsetType
    ) = msgspec.UNSET
    text: NonBlank | None = None


class CommitBody(_Body):
    message: NonBlank


class MergeBody(_Body):
    into: NonBlank | None = None
    strategy: (
        Annotated[Literal["merge", "squash"], _invalid("strategy must be merge or squash.")] | None
    ) = None
    message: NonBlank | None = None


class ModeBody(_Body):  # PUT /api/sessions/{id}/mode, and the WebSocket set_mode
    mode_id: NonBlank


ConfigValue = Annotated[str | bool, _invalid("value must be a string (or true/false).")]


class ConfigBody(_Body):  # PUT /api/sessions/{id}/config/{configId}
    value: ConfigValue


# -- WebSocket commands (API.md "WebSocket stream"; ``type`` and ``id`` are read first) ----


class SetConfigCommand(_Body):  # the REST twin takes the config id in the path
    config_id: NonBlank
    value: ConfigValue


class PermissionCommand(_Body):  # any strings: an unknown one is a 404 / 422 of the domain
    request_id: str
    option_id: str
