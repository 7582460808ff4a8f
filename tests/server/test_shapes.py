"""One source of truth for the API's shapes (server/shapes.py): the OpenAPI components are
generated from its Structs, the views encode through them, and the message frame (built
by hand on the hot path) has exactly the Message Struct's fields, in order."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import get_args, get_type_hints

import msgspec

from server import contents, shapes
from server.stream.frames import message_view
from server.web.openapi.schemas import SCHEMAS
from server.web.views import run_view, session_view, tool_call_view
from store import Repo, Run, SessionRecord, ToolCall

T0 = datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)
UUID = "00000000-0000-4000-8000-000000000001"


def wire_names(struct: type[msgspec.Struct]) -> list[str]:
    return [f.encode_name for f in msgspec.structs.fields(struct)]


def test_the_components_are_the_structs() -> None:
    for name in ("Repo", "Session", "Message", "Run", "ToolCall"):
        schema = SCHEMAS[name]
        assert list(schema["properties"]) == wire_names(getattr(shapes, name)), name
    assert SCHEMAS["Session"]["properties"]["status"] == {"enum": list(shapes.SESSION_STATUSES)}
    assert SCHEMAS["Run"]["properties"]["status"] == {"enum": list(shapes.RUN_STATUSES)}
    assert SCHEMAS["Message"]["required"] == wire_names(shapes.Message)[:-2]  # not raw, dropped


def test_the_message_frame_has_the_message_fields_in_order() -> None:
    row = {
        "id": UUID,
        "session_id": UUID,
        "run_id": None,
        "seq": 1,
        "role": "agent",
        "content": {"type": "text", "text": "hi", "partial": False},
        "step_number": None,
        "created_at": T0,
        "raw": None,
        "dropped": False,
    }
    assert list(message_view(row)) == wire_names(shapes.Message)[:-2]
    assert list(message_view(row, raw=True)) == wire_names(shapes.Message)
    msgspec.convert(message_view(row, raw=True), shapes.Message)  # and it validates


SANDBOX = {"enabled": True, "network": "proxy"}


def test_the_views_encode_through_the_structs() -> None:
    repo = Repo(id=UUID, name="demo", path="/w/demo", is_git_repo=True, created_at=T0)
    session = SessionRecord(
        id=UUID,
        repo_id=UUID,
        agent_id="default",
        status="active",
        title=None,
        created_at=T0,
        updated_at=T0,
        last_activity_at=T0,
        last_seq=0,
        meta={},
    )
    run = Run(
        id=UUID,
        session_id=UUID,
        repo_id=UUID,
        agent_id="default",
        status="running",
        step_count=0,
        max_steps=5,
        created_at=T0,
    )
    call = ToolCall(
        id=UUID,
        run_id=UUID,
        session_id=UUID,
        tool_call_id="c1",
        status="pending",
        step_number=1,
        created_at=T0,
    )
    for view, struct in (
        (session_view(session, repo, SANDBOX), shapes.Session),
        (run_view(run), shapes.Run),
        (tool_call_view(call), shapes.ToolCall),
    ):
        names = wire_names(struct)
        if struct is shapes.Session:  # a list's additions (routes.glance)
            names = [n for n in names if n not in ("runCount", "usage", "match")]
        assert list(view) == names
        msgspec.convert(view, struct)  # the JSON validates against its Struct
    assert session_view(session, repo, SANDBOX)["createdAt"] == "2026-01-01T12:00:00.123Z"


def test_the_request_bodies_are_the_structs() -> None:
    from server.web.openapi import CATALOGUE

    bodies = {
        ("POST", "/api/repos"): shapes.RegisterRepo,
        ("POST", "/api/sessions"): shapes.CreateSession,
        ("POST", "/api/sessions/{sessionId}/prompt"): shapes.PromptBody,
        ("POST", "/api/sessions/{sessionId}/permissions/{requestId}"): shapes.PermissionAnswer,
        ("POST", "/api/sessions/{sessionId}/fork"): shapes.ForkBody,
        ("POST", "/api/sessions/{sessionId}/rewind"): shapes.RewindBody,
        ("POST", "/api/agent-runs/{runId}/resume"): shapes.ResumeBody,
    }
    for operation, struct in bodies.items():
        schema = CATALOGUE[operation]["requestBody"]["content"]["application/json"]["schema"]
        assert list(schema["properties"]) == wire_names(struct), operation
        required = [f.encode_name for f in msgspec.structs.fields(struct) if f.required]
        assert schema["required"] == required, operation


def test_every_message_type_has_its_content_shape() -> None:
    """server.contents has one TypedDict per API.md message type, tagged by ``type``."""
    tags = {
        literal
        for shape in get_args(contents.Content)
        for literal in get_args(get_type_hints(shape)["type"])
    }
    assert tags == set(shapes.MESSAGE_TYPES)
