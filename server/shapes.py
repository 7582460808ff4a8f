"""The shapes of API.md, once: the enums and the resources (Session, Message, Run,
ToolCall, Repo) as msgspec Structs. The views encode through them, the OpenAPI
components are generated from them (``server.web.openapi.schemas``), and so is the UI's
enum module (``server/web/static/enums.js``, ``python -m server.web.ui_enums``).

A cross-cutting leaf, like ``server.settings``: it imports nothing from ``server``."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

import msgspec

__all__ = [
    "MESSAGE_TYPES",
    "ROLES",
    "RUN_STATUSES",
    "SESSION_STATUSES",
    "TOOL_STATUSES",
    "CreateSession",
    "ForkBody",
    "ForkedFrom",
    "ISOLATIONS",
    "Isolation",
    "Message",
    "MessageType",
    "ElicitationAnswer",
    "PermissionAnswer",
    "PromptBody",
    "RegisterRepo",
    "Repo",
    "ResumeBody",
    "RewindBody",
    "Role",
    "Run",
    "RunStatus",
    "Session",
    "SessionStatus",
    "ToolCall",
    "ToolStatus",
    "Workspace",
]

SessionStatus = Literal["active", "completed", "cancelled", "error"]
RunStatus = Literal["running", "completed", "failed", "cancelled", "paused", "interrupted"]
ToolStatus = Literal["pending", "in_progress", "completed", "error", "cancelled"]
Role = Literal["user", "agent", "system"]
Isolation = Literal["none", "worktree"]
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
    "update",
]

SESSION_STATUSES: tuple[str, ...] = get_args(SessionStatus)
RUN_STATUSES: tuple[str, ...] = get_args(RunStatus)
TOOL_STATUSES: tuple[str, ...] = get_args(ToolStatus)
ROLES: tuple[str, ...] = get_args(Role)
MESSAGE_TYPES: tuple[str, ...] = get_args(MessageType)
ISOLATIONS: tuple[str, ...] = get_args(Isolation)

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


class Workspace(_Shape):
    """Where the session's agent works: the repository itself, or its own git worktree."""

    path: str
    isolation: Isolation
    branch: str | None
    base_ref: str | None
    base_commit: str | None


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
    metadata: dict[str, Any]
    workspace: Workspace
    controls: dict[str, Any]  # API.md "Agent controls" (server.sessions.controls)


class Message(msgspec.Struct, rename="camel"):
    """``raw`` and ``dropped`` are there only with the raw frame (export, ``raw=true``)."""

    id: Uuid
    session_id: Uuid
    run_id: Uuid | None
    seq: Annotated[int, msgspec.Meta(ge=1)]
    role: Role
    content: dict[str, Any]
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
    usage: dict[str, Any] | None
    cost: dict[str, Any] | None
    duration_ms: int | None
    created_at: Time
    completed_at: Time | None


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


# -- request bodies (what the server accepts; server.web.requests reads them) ------------


class _Body(msgspec.Struct, rename="camel"):
    pass


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
    isolation: Isolation | None = None
    base_ref: NonBlank | None = None
    mode_id: NonBlank | None = None  # API.md "Agent controls": applied after session/new
    config: dict[str, str | bool] | None = None
    # API.md "Agent controls", MCP servers: AGENTS_FILE names added to the agent's defaults
    mcp_servers: list[NonBlank] | None = None


class PromptBody(_Body):
    """``text`` and/or ``content`` (API.md "Prompt content": text, image, file blocks)."""

    text: NonBlank | None = None
    content: list[dict[str, Any]] | None = None


class PermissionAnswer(_Body):
    option_id: NonBlank


class ElicitationAnswer(_Body):
    action: Literal["accept", "decline", "cancel"]
    content: Annotated[
        dict[str, Any] | None,
        msgspec.Meta(
            description="With accept on a form: the answer, matching the requestedSchema "
            "(else 422 and the request stays pending)."
        ),
    ] = None


class ForkBody(_Body):
    upto_seq: Seq | None = None
    title: str | None = None


class RewindBody(_Body):
    to_seq: Seq
    restore_files: bool | None = None


class ResumeBody(_Body):
    max_steps: (
        Annotated[int, msgspec.Meta(ge=1, description="Capped by MAX_TOTAL_STEPS_PER_RUN.")]
        | msgspec.UnsetType
    ) = msgspec.UNSET
    text: NonBlank | None = None
