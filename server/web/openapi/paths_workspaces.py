"""OpenAPI entries of API.md "Worktrees and changes": the ``Changes`` schema and the
changes, commit, merge and worktree operations. ``Workspace``, ``Session.workspace``,
create's ``isolation``/``baseRef`` and rewind's ``restoreFiles`` are generated from
``server.shapes`` with the rest."""

from __future__ import annotations

from typing import Any

from server import shapes
from server.web.openapi.parts import (
    SESSION,
    body_schema,
    json_response,
    op,
    optional,
    query,
    request_body,
)
from server.web.openapi.schemas import UUID, Schema, closed, nullable, ref

__all__ = ["workspace_paths"]


def workspace_paths(
    catalogue: dict[tuple[str, str], Any], schemas: dict[str, Schema]
) -> dict[tuple[str, str], Any]:
    file_change = closed(
        ["path", "oldPath", "status", "additions", "deletions", "binary"],
        path={"type": "string"},
        oldPath=nullable({"type": "string"}),
        status={"enum": ["added", "modified", "deleted", "renamed"]},
        additions={"type": "integer", "minimum": 0},
        deletions={"type": "integer", "minimum": 0},
        binary={"type": "boolean"},
    )
    schemas["Changes"] = closed(
        ["baseCommit", "scope", "files", "patch", "truncated"],
        baseCommit=nullable({"type": "string"}),
        scope={"enum": ["session", "workspace"]},
        files={"type": "array", "items": file_change},
        patch={"type": "string", "description": "Unified diff, at most MAX_DIFF_BYTES."},
        truncated={"type": "boolean"},
    )

    session_param = [SESSION]
    added: dict[tuple[str, str], Any] = {}
    added[("GET", "/api/sessions/{sessionId}/changes")] = op(
        "What the session (or one run) changed in its workspace",
        {
            200: {
                "description": "Files and a capped unified patch (format=patch: the patch).",
                "content": {
                    "application/json": {"schema": ref("Changes")},
                    "text/x-diff": {"schema": {"type": "string"}},
                },
            }
        },
        params=[
            *session_param,
            query("run", optional(UUID), "Only what this run changed."),
            query("format", optional({"enum": ["json", "patch"]})),
        ],
        errors=[409, 503],
    )
    added[("POST", "/api/sessions/{sessionId}/commit")] = op(
        "Commit every change of a worktree session on its branch",
        {
            201: json_response(
                "The new commit and the files it changed.",
                closed(
                    ["commit", "files"],
                    commit={"type": "string"},
                    files={"type": "array", "items": file_change},
                ),
            )
        },
        params=session_param,
        body=request_body(body_schema(shapes.CommitBody)),
        errors=[409, 503],
    )
    added[("POST", "/api/sessions/{sessionId}/merge")] = op(
        "Merge (or squash) the session's branch into a branch",
        {
            200: json_response(
                "The merge commit and the branch it is on.",
                closed(["commit", "into"], commit={"type": "string"}, into={"type": "string"}),
            )
        },
        params=session_param,
        body=request_body(body_schema(shapes.MergeBody), required=False),
        errors=[409, 503],
    )
    added[("DELETE", "/api/sessions/{sessionId}/worktree")] = op(
        "Remove an ended session's worktree (and its branch with deleteBranch=true)",
        {204: {"description": "Removed."}},
        params=[*session_param, query("deleteBranch", {"type": "boolean"})],
        errors=[409, 503],
    )
    return added
