"""OpenAPI entries of API.md "Worktrees and changes": the ``Workspace`` and ``Changes``
schemas, ``Session.workspace``, create's ``isolation``/``baseRef``, rewind's
``restoreFiles``, and the changes, commit, merge and worktree operations.
``extend`` adds them to the document's catalogue (called once by ``server.web.openapi``)."""

from __future__ import annotations

from typing import Any

__all__ = ["extend"]


def extend(catalogue: dict[tuple[str, str], Any], schemas: dict[str, Any]) -> None:
    from server.web import openapi as o  # the helpers; imported late (openapi imports us)

    nonblank = o.NONBLANK
    schemas["Workspace"] = o._closed(
        ["path", "isolation", "branch", "baseRef", "baseCommit"],
        path={"type": "string"},
        isolation={"enum": ["none", "worktree"]},
        branch=o._null({"type": "string"}),
        baseRef=o._null({"type": "string"}),
        baseCommit=o._null({"type": "string"}),
    )
    file_change = o._closed(
        ["path", "oldPath", "status", "additions", "deletions", "binary"],
        path={"type": "string"},
        oldPath=o._null({"type": "string"}),
        status={"enum": ["added", "modified", "deleted", "renamed"]},
        additions={"type": "integer", "minimum": 0},
        deletions={"type": "integer", "minimum": 0},
        binary={"type": "boolean"},
    )
    schemas["Changes"] = o._closed(
        ["baseCommit", "files", "patch", "truncated"],
        baseCommit=o._null({"type": "string"}),
        files={"type": "array", "items": file_change},
        patch={"type": "string", "description": "Unified diff, at most MAX_DIFF_BYTES."},
        truncated={"type": "boolean"},
    )
    session = schemas["Session"]
    session["properties"]["workspace"] = o._ref("Workspace")
    session["required"].append("workspace")

    create = catalogue[("POST", "/api/sessions")]["requestBody"]["content"]["application/json"]
    create["schema"]["properties"].update(
        isolation=o._null({"enum": ["none", "worktree"]}), baseRef=o._null(nonblank)
    )
    rewind = catalogue[("POST", "/api/sessions/{sessionId}/rewind")]["requestBody"]["content"]
    rewind["application/json"]["schema"]["properties"]["restoreFiles"] = o._null(
        {"type": "boolean"}
    )
    session_param = [o.SESSION]
    catalogue[("GET", "/api/sessions/{sessionId}/changes")] = o._op(
        "What the session (or one run) changed in its workspace",
        {
            200: {
                "description": "Files and a capped unified patch (format=patch: the patch).",
                "content": {
                    "application/json": {"schema": o._ref("Changes")},
                    "text/x-diff": {"schema": {"type": "string"}},
                },
            }
        },
        params=[
            *session_param,
            o._query("run", o._optional(o.UUID), "Only what this run changed."),
            o._query("format", o._optional({"enum": ["json", "patch"]})),
        ],
        errors=[409, 503],
    )
    catalogue[("POST", "/api/sessions/{sessionId}/commit")] = o._op(
        "Commit every change of a worktree session on its branch",
        {
            201: o._json(
                "The new commit and the files it changed.",
                o._closed(
                    ["commit", "files"],
                    commit={"type": "string"},
                    files={"type": "array", "items": file_change},
                ),
            )
        },
        params=session_param,
        body=o._body(o._object(["message"], message=nonblank)),
        errors=[409, 503],
    )
    catalogue[("POST", "/api/sessions/{sessionId}/merge")] = o._op(
        "Merge (or squash) the session's branch into a branch",
        {
            200: o._json(
                "The merge commit and the branch it is on.",
                o._closed(["commit", "into"], commit={"type": "string"}, into={"type": "string"}),
            )
        },
        params=session_param,
        body=o._body(
            o._object(
                into=o._null(nonblank),
                strategy=o._null({"enum": ["merge", "squash"]}),
                message=o._null(nonblank),
            ),
            required=False,
        ),
        errors=[409, 503],
    )
    catalogue[("DELETE", "/api/sessions/{sessionId}/worktree")] = o._op(
        "Remove an ended session's worktree (and its branch with deleteBranch=true)",
        {204: {"description": "Removed."}},
        params=[*session_param, o._query("deleteBranch", {"type": "boolean"})],
        errors=[409, 503],
    )
