"""SQLAlchemy 2 models: repos, sessions, the append-only message log, runs, tool calls,
permission requests."""

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from store.jsontypes import JsonObject, JsonValue
from store.rollup import RUN_STAT_COLUMNS, run_table, tool_table

__all__ = [
    "ApiToken",
    "Base",
    "Login",
    "Message",
    "Node",
    "Permission",
    "Repo",
    "Run",
    "SessionOwner",
    "SessionRecord",
    "ToolCall",
    "User",
    "UtcDateTime",
    "postgresql_options",
    "schema_metadata",
    "utcnow",
]


class _Json(TypeDecorator[JsonValue]):
    """JSON, and JSONB on PostgreSQL. The PostgreSQL dialect's modules load only when a
    PostgreSQL engine first uses the type: ``with_variant(JSONB)`` imported them on every
    start, a large part of a SQLite server's start-up (``-X importtime``)."""

    impl = JSON
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> Any:
        if dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import JSONB

            return dialect.type_descriptor(JSONB(none_as_null=True))
        return dialect.type_descriptor(JSON(none_as_null=True))


# none_as_null: Python None is SQL NULL (not the JSON literal null), so IS NULL works.
JsonType = _Json(none_as_null=True)


_ELICITATION = "type = 'elicitation'"
_CLIENT_TOOL = "type = 'client_tool'"


def postgresql_options() -> None:
    """Give the metadata its PostgreSQL-only options (``ix_messages_elicitation``'s WHERE)
    before a PostgreSQL engine uses it; idempotent. A ``postgresql_*`` keyword loads the
    PostgreSQL dialect's modules to validate it (slow: ``-X importtime``), so the
    models leave it out and a SQLite server never pays for them. The schema itself comes
    from the migrations (0007 makes the index partial on both databases); this keeps
    ``create_all`` and autogenerate comparisons equal to them."""
    table = Base.metadata.tables["messages"]
    index = next(i for i in table.indexes if i.name == "ix_messages_elicitation")
    index.dialect_kwargs["postgresql_where"] = text(_ELICITATION)
    index = next(i for i in table.indexes if i.name == "ix_messages_client_tool")
    index.dialect_kwargs["postgresql_where"] = text(_CLIENT_TOOL)


def utcnow() -> datetime:
    return datetime.now(UTC)


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every backend (SQLite drops the zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    type_annotation_map = {JsonObject: JsonType, datetime: UtcDateTime}


class Repo(Base):
    __tablename__ = "repos"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    path: Mapped[str] = mapped_column(Text, unique=True)
    is_git_repo: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)


class SessionRecord(Base):
    __tablename__ = "sessions"
    __table_args__ = (
        Index("ix_sessions_status", "status"),
        Index("ix_sessions_created", "created_at", "id"),
        Index("ix_sessions_repo", "repo_id"),
        Index("ix_sessions_owner", "owner_id", "status"),
        Index("ix_sessions_activity", "last_activity_at", "id"),  # sort=activity (0011)
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    repo_id: Mapped[str] = mapped_column(ForeignKey("repos.id"))
    agent_id: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(16))
    title: Mapped[str | None] = mapped_column(Text, nullable=True)
    # user | agent | prompt; NULL with a title means the user's (sessions before 0011)
    title_source: Mapped[str | None] = mapped_column(String(16), nullable=True)
    archived: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime)
    last_activity_at: Mapped[datetime] = mapped_column(UtcDateTime)
    # The highest seq ever used (dropped messages included), so cursors stay valid.
    last_seq: Mapped[int] = mapped_column(Integer, default=0)
    active_run_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    parent_run_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    forked_from_session_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    forked_from_seq: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # The agent's own session id (ACP sessionId), for session/load and session/resume.
    agent_session_id: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Set when the agent's context must be rebuilt from the transcript before the next turn.
    needs_context: Mapped[bool] = mapped_column(Boolean, default=False)
    meta: Mapped[JsonObject] = mapped_column("metadata", JsonType, default=dict)
    # The session's workspace (API.md, Worktrees and changes): ``none`` works in the
    # repository itself; ``worktree`` in ``workspace_path`` on ``branch``.
    isolation: Mapped[str] = mapped_column(String(16), default="none", server_default="none")
    workspace_path: Mapped[str | None] = mapped_column(Text, nullable=True)
    branch: Mapped[str | None] = mapped_column(Text, nullable=True)
    base_ref: Mapped[str | None] = mapped_column(Text, nullable=True)
    base_commit: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # ``Workspace.merged`` (API.md, Review): {commit, into, at} of the last merge.
    merged: Mapped[JsonObject | None] = mapped_column(JsonType, nullable=True)
    # The agent's controls as last known, and the mode/config values kept for resumption.
    controls: Mapped[JsonObject | None] = mapped_column(JsonType, nullable=True)
    agent_config: Mapped[JsonObject | None] = mapped_column(JsonType, nullable=True)
    # API.md "Users and access" (0010): who made it (the name is kept: a removed user's
    # sessions stay, still showing who made them) and who may read it.
    owner_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    owner_name: Mapped[str | None] = mapped_column(String(255), nullable=True)
    visibility: Mapped[str] = mapped_column(String(16), default="team", server_default="team")
    # The client tools the session registered (API.md "Client tools"), kept for restarts.
    client_tools: Mapped[JsonValue | None] = mapped_column(JsonType, nullable=True)


class Attachment(Base):
    """An image a prompt carried (API.md, Prompt content), served back by its sha256."""

    __tablename__ = "attachments"

    session_id: Mapped[str] = mapped_column(
        ForeignKey("sessions.id", ondelete="CASCADE"), primary_key=True
    )
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    mime_type: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(Integer)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)


class Message(Base):
    __tablename__ = "messages"
    __table_args__ = (
        UniqueConstraint("session_id", "seq", name="uq_messages_session_seq"),
        Index("ix_messages_run", "run_id", "seq"),
        # start-up recovery: every session's elicitations without a scan (0007)
        # partial; on PostgreSQL too, once postgresql_options() has run
        Index("ix_messages_elicitation", "session_id", "seq", sqlite_where=text(_ELICITATION)),
        # start-up recovery: the client tool calls a dead server left pending (0012)
        Index("ix_messages_client_tool", "session_id", "seq", sqlite_where=text(_CLIENT_TOOL)),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    run_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    step_number: Mapped[int | None] = mapped_column(Integer, nullable=True)
    role: Mapped[str] = mapped_column(String(16))
    type: Mapped[str] = mapped_column(String(16))
    partial: Mapped[bool] = mapped_column(Boolean, default=False)
    dropped: Mapped[bool] = mapped_column(Boolean, default=False)
    content: Mapped[JsonObject] = mapped_column(JsonType)
    raw: Mapped[JsonObject | None] = mapped_column(JsonType, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_created", "created_at", "id"),
        Index("ix_runs_session_created", "session_id", "created_at", "id"),
        Index("ix_runs_status", "status"),
        # /api/stats: one index-only range scan per query (see store/stats.py).
        Index("ix_runs_stats", "created_at", *RUN_STAT_COLUMNS),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"))
    repo_id: Mapped[str] = mapped_column(String(36))
    agent_id: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(16))
    stop_reason: Mapped[str | None] = mapped_column(String(32), nullable=True)
    step_count: Mapped[int] = mapped_column(Integer, default=0)
    max_steps: Mapped[int] = mapped_column(Integer)
    parent_run_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    resumed_from: Mapped[str | None] = mapped_column(String(36), nullable=True)
    summary: Mapped[str | None] = mapped_column(Text, nullable=True)
    error_message: Mapped[str | None] = mapped_column(Text, nullable=True)
    usage: Mapped[JsonObject | None] = mapped_column(JsonType, nullable=True)
    cost: Mapped[JsonObject | None] = mapped_column(JsonType, nullable=True)
    duration_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    completed_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    # Roll-ups of usage, cost and tool calls, written when the run ends (store.runs.update_run)
    # so the statistics aggregate plain columns instead of JSON.
    input_tokens: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    output_tokens: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    cached_tokens: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    cost_amount: Mapped[float | None] = mapped_column(Float, nullable=True)
    cost_currency: Mapped[str | None] = mapped_column(String(16), nullable=True)
    tool_call_count: Mapped[int | None] = mapped_column(Integer, nullable=True)
    tool_failure_count: Mapped[int | None] = mapped_column(Integer, nullable=True)
    user_id: Mapped[str | None] = mapped_column(String(36), nullable=True)  # who prompted (0010)


class ToolCall(Base):
    __tablename__ = "tool_calls"
    __table_args__ = (
        UniqueConstraint("run_id", "tool_call_id", name="uq_tool_calls_run_call"),
        Index("ix_tool_calls_run_step", "run_id", "step_number"),
        Index("ix_tool_calls_stats", "created_at", "tool_name", "status", "duration_ms"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    session_id: Mapped[str] = mapped_column(String(36))
    message_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    tool_call_id: Mapped[str] = mapped_column(Text)
    tool_name: Mapped[str | None] = mapped_column(Text, nullable=True)
    kind: Mapped[str | None] = mapped_column(String(32), nullable=True)
    input: Mapped[JsonValue] = mapped_column(JsonType, nullable=True)
    output: Mapped[JsonValue] = mapped_column(JsonType, nullable=True)
    status: Mapped[str] = mapped_column(String(16))
    duration_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    step_number: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    completed_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)


class Permission(Base):
    __tablename__ = "permissions"
    __table_args__ = (Index("ix_permissions_session", "session_id"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"))
    run_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    tool_call_id: Mapped[str | None] = mapped_column(Text, nullable=True)
    options: Mapped[JsonValue] = mapped_column(JsonType)
    outcome: Mapped[JsonObject | None] = mapped_column(JsonType, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    decided_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)


class Node(Base):
    """A server node sharing the database (PostgreSQL scale-out)."""

    __tablename__ = "nodes"

    id: Mapped[str] = mapped_column(String(255), primary_key=True)
    url: Mapped[str] = mapped_column(Text)
    started_at: Mapped[datetime] = mapped_column(UtcDateTime)
    heartbeat_at: Mapped[datetime] = mapped_column(UtcDateTime)


class SessionOwner(Base):
    """Which node runs a live session's agent, until when (renewed by its heartbeat)."""

    __tablename__ = "session_owners"
    __table_args__ = (Index("ix_session_owners_node", "node_id"),)

    session_id: Mapped[str] = mapped_column(
        ForeignKey("sessions.id", ondelete="CASCADE"), primary_key=True
    )
    node_id: Mapped[str] = mapped_column(String(255))
    lease_until: Mapped[datetime] = mapped_column(UtcDateTime)


class User(Base):
    """A person (or script) that signs in with a token (API.md "Users and access")."""

    __tablename__ = "users"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)


class ApiToken(Base):
    """A user's token: only the SHA-256 of the secret is kept (the secret is shown once)."""

    __tablename__ = "api_tokens"
    __table_args__ = (Index("ix_api_tokens_user", "user_id"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str | None] = mapped_column(String(255), nullable=True)
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)
    last_used_at: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)


class Login(Base):
    """A browser's sign-in (its cookie holds the secret whose SHA-256 is kept here). It
    ends with the token it was made with: ``token_id`` cascades. ``token_id`` and
    ``user_id`` are both null for a sign-in with ``API_TOKEN``."""

    __tablename__ = "logins"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[str | None] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), nullable=True
    )
    token_id: Mapped[str | None] = mapped_column(
        ForeignKey("api_tokens.id", ondelete="CASCADE"), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)


def schema_metadata() -> MetaData:
    """Every table of the schema: the models' and the statistics roll-up's (store/rollup.py,
    migration 0006, kept by SQL triggers), for Alembic's comparison and ``create_all``. No
    query is built from the roll-up's tables (its SQL is written out), so a server does
    not make their 225 columns at import (~6 ms of start-up)."""
    if "stats_runs" not in Base.metadata.tables:
        run_table(Base.metadata)
        tool_table(Base.metadata)
    return Base.metadata
