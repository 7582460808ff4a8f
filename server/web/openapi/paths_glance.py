"""OpenAPI entries of API.md "Finding and keeping sessions": the list's ``q``, ``sort``
and ``archived``, ``PATCH`` and purge on a session, queued prompts and dropping one, and
``Agent.controls``. ``glance_paths`` amends the shared operations and shapes and returns
the new operations (the Session fields come from ``shapes.Session``)."""

from __future__ import annotations

from typing import Any

from server import shapes
from server.web.openapi.parts import (
    RUN,
    SESSION,
    SESSION_VIEW,
    body_schema,
    json_response,
    op,
    query,
    request_body,
)
from server.web.openapi.schemas import GENERATED, UUID, Schema, closed, nullable

__all__ = ["glance_paths"]


def glance_paths(
    catalogue: dict[tuple[str, str], Any], schemas: dict[str, Schema]
) -> dict[tuple[str, str], Any]:
    listing = catalogue["GET", "/api/sessions"]
    listing["summary"] = "List or search sessions"
    listing["parameters"] += [
        query(
            "q",
            {"type": "string", "maxLength": 500},
            "Full-text search over titles and message texts, best match first; each session "
            "then carries match. Words only: no query syntax. Pages with offset.",
        ),
        query("sort", {"enum": ["created", "activity"]}, "Newest created (default) or active."),
        query(
            "archived",
            {"enum": ["false", "true", "all"]},
            "Archived sessions are left out (false, the default), alone (true) or in (all).",
        ),
    ]
    delete = catalogue["DELETE", "/api/sessions/{sessionId}"]
    delete["summary"] = "Cancel a session, or with purge=true remove an ended one for good"
    delete["parameters"] = [
        *delete["parameters"],
        query("purge", {"type": "boolean"}, "Remove the ended session and all it owns."),
        query("keepBranch", {"type": "boolean"}, "With purge: keep its git branch."),
    ]
    delete["responses"]["204"] = {"description": "Purged."}
    prompt = catalogue["POST", "/api/sessions/{sessionId}/prompt"]
    prompt["responses"]["202"] = json_response(
        "Accepted: started (the user message is stored), or queued behind the running turn.",
        closed(
            ["runId", "sessionId"],
            runId=UUID,
            sessionId=UUID,
            queued={"type": "boolean"},
            position={"type": "integer", "minimum": 1},
        ),
    )
    for name in ("SessionUsage", "SessionMatch"):  # generated with Session's
        schemas[name] = GENERATED[name]
    agent = schemas["Agent"]
    agent["properties"]["controls"] = nullable(
        {
            "type": "object",
            "description": "The agent's controls as its latest session last knew them "
            "(null until it has started once): modes, config options for a new session.",
        }
    )
    agent["required"].append("controls")
    return {
        ("PATCH", "/api/sessions/{sessionId}"): op(
            "Rename, share or archive a session (only an ended one is archived)",
            {200: SESSION_VIEW},
            params=[SESSION],
            body=request_body(body_schema(shapes.PatchSession)),
            errors=[409],
        ),
        ("DELETE", "/api/sessions/{sessionId}/queue/{runId}"): op(
            "Drop a queued prompt (its run ends cancelled)",
            {204: {"description": "Dropped."}},
            params=[SESSION, RUN],
        ),
    }
