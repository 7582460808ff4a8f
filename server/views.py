"""Records → the JSON shapes of API.md (camelCase, ISO 8601 UTC with Z)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from store import Message, Repo, Run, SessionRecord, ToolCall

__all__ = ["iso", "message_view", "repo_view", "run_view", "session_view", "tool_call_view"]


def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    text = value.isoformat(timespec="milliseconds")  # UTC from the store; half strftime's cost
    return text[:-6] + "Z" if text.endswith("+00:00") else text + "Z"


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
    }


def message_view(message: Message | dict[str, Any], *, raw: bool = False) -> dict[str, Any]:
    row = message if isinstance(message, dict) else _message_row(message)
    view = {
        "id": row["id"],
        "sessionId": row["session_id"],
        "runId": row["run_id"],
        "seq": row["seq"],
        "role": row["role"],
        "content": row["content"],
        "stepNumber": row["step_number"],
        "timestamp": iso(row["created_at"]),
    }
    if raw:
        view["raw"] = row["raw"]
        view["dropped"] = row["dropped"]
    return view


def _message_row(message: Message) -> dict[str, Any]:
    return {
        "id": message.id,
        "session_id": message.session_id,
        "run_id": message.run_id,
        "seq": message.seq,
        "role": message.role,
        "content": message.content,
        "step_number": message.step_number,
        "created_at": message.created_at,
        "raw": message.raw,
        "dropped": message.dropped,
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
