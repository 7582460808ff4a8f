"""Records → the JSON shapes of API.md (camelCase, ISO 8601 UTC with Z)."""

from __future__ import annotations

from typing import Any

from server.stream.frames import iso, message_view
from store import Repo, Run, SessionRecord, ToolCall

__all__ = [
    "iso",
    "message_view",
    "repo_view",
    "run_view",
    "session_view",
    "tool_call_view",
    "workspace_view",
]


def repo_view(repo: Repo) -> dict[str, Any]:
    return {
        "id": repo.id,
        "name": repo.name,
        "path": repo.path,
        "isGitRepo": repo.is_git_repo,
        "createdAt": iso(repo.created_at),
    }


def session_view(session: SessionRecord, repo: Repo) -> dict[str, Any]:
    forked = (
        {"sessionId": session.forked_from_session_id, "seq": session.forked_from_seq}
        if session.forked_from_session_id
        else None
    )
    return {
        "id": session.id,
        "repoId": session.repo_id,
        "repo": repo_view(repo),
        "agentId": session.agent_id,
        "status": session.status,
        "title": session.title,
        "createdAt": iso(session.created_at),
        "updatedAt": iso(session.updated_at),
        "lastSeq": session.last_seq,
        "activeRunId": session.active_run_id,
        "parentRunId": session.parent_run_id,
        "forkedFrom": forked,
        "metadata": session.meta or {},
        "workspace": workspace_view(session, repo),
    }


def workspace_view(session: SessionRecord, repo: Repo) -> dict[str, Any]:
    return {
        "path": session.workspace_path or repo.path,
        "isolation": session.isolation or "none",
        "branch": session.branch,
        "baseRef": session.base_ref,
        "baseCommit": session.base_commit,
    }


def run_view(run: Run) -> dict[str, Any]:
    return {
        "id": run.id,
        "sessionId": run.session_id,
        "repoId": run.repo_id,
        "agentId": run.agent_id,
        "status": run.status,
        "stopReason": run.stop_reason,
        "stepCount": run.step_count,
        "maxSteps": run.max_steps,
        "parentRunId": run.parent_run_id,
        "resumedFrom": run.resumed_from,
        "summary": run.summary,
        "errorMessage": run.error_message,
        "usage": run.usage,
        "cost": run.cost,
        "durationMs": run.duration_ms,
        "createdAt": iso(run.created_at),
        "completedAt": iso(run.completed_at),
    }


def tool_call_view(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "runId": call.run_id,
        "messageId": call.message_id,
        "toolCallId": call.tool_call_id,
        "toolName": call.tool_name,
        "kind": call.kind,
        "input": call.input,
        "output": call.output,
        "status": call.status,
        "durationMs": call.duration_ms,
        "stepNumber": call.step_number,
        "createdAt": iso(call.created_at),
        "completedAt": iso(call.completed_at),
    }
