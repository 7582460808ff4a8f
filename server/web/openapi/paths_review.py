"""OpenAPI entries of API.md "Review": the workspace's (or a commit's) tree and files,
reverting a file or hunks of it, and review comments sent to the agent."""

from __future__ import annotations

from typing import Any

from server.web.openapi.parts import (
    SESSION,
    body_schema,
    json_response,
    op,
    optional,
    query,
    request_body,
)
from server.web.openapi.schemas import NONBLANK, Schema, closed, nullable, ref
from server.web.review_bodies import RevertBody, ReviewBody, ReviewCommentBody

__all__ = ["review_paths"]

PATH = query("path", {"type": "string"}, "Relative to the workspace (or absolute inside it).")
FILE_PATH = {
    **query("path", NONBLANK, "Relative to the workspace (or absolute inside it)."),
    "required": True,
}
REF = query("ref", optional({"type": "string"}), "A commit (or branch); absent: the workspace now.")


def _review_body() -> Schema:
    """ReviewBody with its comment schema inline (the document has no component for it)."""
    schema = body_schema(ReviewBody)
    comments = schema["properties"]["comments"]
    comments["items"] = body_schema(ReviewCommentBody)
    return schema


def review_paths(
    catalogue: dict[tuple[str, str], Any], schemas: dict[str, Schema]
) -> dict[tuple[str, str], Any]:
    entry = closed(
        ["name", "path", "type", "size"],
        name={"type": "string"},
        path={"type": "string"},
        type={"enum": ["file", "dir"]},
        size=nullable({"type": "integer", "minimum": 0}),
    )
    added: dict[tuple[str, str], Any] = {}
    added[("GET", "/api/sessions/{sessionId}/tree")] = op(
        "The entries of a directory of the workspace (or of a commit)",
        {
            200: json_response(
                "Directories first, then files.",
                closed(["entries"], entries={"type": "array", "items": entry}),
            )
        },
        params=[SESSION, PATH, REF],
        errors=[409, 503],
    )
    added[("GET", "/api/sessions/{sessionId}/file")] = op(
        "A file of the workspace (or of a commit)",
        {
            200: {
                "description": "The file's bytes: text, or octet-stream when binary.",
                "content": {
                    "text/plain": {"schema": {"type": "string"}},
                    "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
                },
            }
        },
        params=[
            SESSION,
            FILE_PATH,
            REF,
            query("raw", {"type": "boolean"}, "Serve files over MAX_EMBED_BYTES too."),
        ],
        errors=[409, 503],
    )
    added[("POST", "/api/sessions/{sessionId}/changes/revert")] = op(
        "Put a changed file, or some hunks of it, back as at baseCommit",
        {200: json_response("The changes after the revert.", ref("Changes"))},
        params=[SESSION],
        body=request_body(body_schema(RevertBody)),
        errors=[409, 503],
    )
    added[("POST", "/api/sessions/{sessionId}/review")] = op(
        "Send line comments to the agent as one review prompt",
        {
            202: json_response(
                "The run the review started.",
                closed(["runId"], runId={"type": "string", "format": "uuid"}),
            )
        },
        params=[SESSION],
        body=request_body(_review_body()),
        errors=[409, 429, 502, 503],
    )
    return added
