"""Records → the JSON shapes of API.md (camelCase, ISO 8601 UTC with Z), through the
Structs of ``server.shapes`` (the OpenAPI components are generated from the same)."""

from __future__ import annotations

from typing import Any

import msgspec

from agent_bridge.jsontypes import JsonObject
from server import shapes
from server.contents import as_json
from server.sessions import Repo, Run, SessionRecord, ToolCall, empty_controls
from server.stream.frames import iso, message_view

__all__ = [
    "iso",
    "message_view",
    "repo_view",
    "run_view",
    "session_view",
    "tool_call_view",
    "workspace_view",
]


def _time(value: Any) -> str:
    text = iso(value)
    assert text is not None
    return text


def repo_shape(repo: Repo) -> shapes.Repo:
    return shapes.Repo(
        id=repo.id,
        name=repo.name,
        path=repo.path,
        is_git_repo=repo.is_git_repo,
        created_at=_time(repo.created_at),
    )


def repo_view(repo: Repo) -> JsonObject:
    return msgspec.to_builtins(repo_shape(repo))  # type: ignore[no-any-return]


def session_view(session: SessionRecord, repo: Repo, sandbox: JsonObject) -> JsonObject:
    """``sandbox``: what is in force (``Sessions.sandbox_view``)."""
    forked = (
        shapes.ForkedFrom(session.forked_from_session_id, session.forked_from_seq or 0)
        if session.forked_from_session_id
        else None
    )
    shape = shapes.Session(
        id=session.id,
        repo_id=session.repo_id,
        repo=repo_shape(repo),
        agent_id=session.agent_id,
        status=session.status,  # type: ignore[arg-type] # the store holds the enum's values
        title=session.title,
        created_at=_time(session.created_at),
        updated_at=_time(session.updated_at),
        last_seq=session.last_seq,
        active_run_id=session.active_run_id,
        parent_run_id=session.parent_run_id,
        forked_from=forked,
        metadata=session.meta or {},
        workspace=workspace_shape(session, repo),
        controls=session.controls or as_json(empty_controls()),
        sandbox=msgspec.convert(sandbox, shapes.Sandbox),
        owner=shapes.Owner(session.owner_id, session.owner_name or "")
        if session.owner_id
        else None,
        visibility=session.visibility or "team",  # type: ignore[arg-type] # the enum's values
        # API.md "Finding and keeping sessions": a title without a source is a person's
        title_source=session.title_source or ("user" if session.title else None),  # type: ignore[arg-type]
        archived=bool(session.archived),
        last_activity_at=iso(session.last_activity_at),
    )
    return msgspec.to_builtins(shape)  # type: ignore[no-any-return]


def workspace_shape(session: SessionRecord, repo: Repo) -> shapes.Workspace:
    """API.md "Worktrees and changes"."""
    return shapes.Workspace(
        path=session.workspace_path or repo.path,
        isolation=session.isolation or "none",  # type: ignore[arg-type] # the enum's values
        branch=session.branch,
        base_ref=session.base_ref,
        base_commit=session.base_commit,
        merged=msgspec.convert(session.merged, shapes.Merged) if session.merged else None,
    )


def workspace_view(session: SessionRecord, repo: Repo) -> JsonObject:
    return msgspec.to_builtins(workspace_shape(session, repo))  # type: ignore[no-any-return]


def run_view(run: Run) -> JsonObject:
    shape = shapes.Run(
        id=run.id,
        session_id=run.session_id,
        repo_id=run.repo_id,
        agent_id=run.agent_id,
        status=run.status,  # type: ignore[arg-type] # the store holds the enum's values
        stop_reason=run.stop_reason,
        step_count=run.step_count,
        max_steps=run.max_steps,
        parent_run_id=run.parent_run_id,
        resumed_from=run.resumed_from,
        summary=run.summary,
        error_message=run.error_message,
        usage=run.usage,
        cost=run.cost,
        duration_ms=run.duration_ms,
        created_at=_time(run.created_at),
        completed_at=iso(run.completed_at),
        user_id=run.user_id,
    )
    return msgspec.to_builtins(shape)  # type: ignore[no-any-return]


def tool_call_view(call: ToolCall) -> JsonObject:
    shape = shapes.ToolCall(
        id=call.id,
        run_id=call.run_id,
        message_id=call.message_id,
        tool_call_id=call.tool_call_id,
        tool_name=call.tool_name,
        kind=call.kind,
        input=call.input,
        output=call.output,
        status=call.status,  # type: ignore[arg-type] # the store holds the enum's values
        duration_ms=call.duration_ms,
        step_number=call.step_number,
        created_at=_time(call.created_at),
        completed_at=iso(call.completed_at),
    )
    return msgspec.to_builtins(shape)  # type: ignore[no-any-return]
