"""OpenAPI entries of API.md "Agent controls": the ``Controls`` schema, ``Session.controls``,
create's ``modeId``/``config``, the ``controls`` message type, and the controls, mode,
config and elicitation-answer operations. ``control_paths`` amends the shared shapes and
returns the new ones."""

from __future__ import annotations

from typing import Any

from server import shapes
from server.web.openapi.parts import (
    SESSION,
    body_schema,
    int_param,
    json_response,
    op,
    path_param,
    query,
    request_body,
)
from server.web.openapi.schemas import UUID, Schema, closed, nullable, obj, ref

__all__ = ["control_paths"]

_VALUE = {"anyOf": [{"type": "string"}, {"type": "boolean"}]}


def control_paths(
    catalogue: dict[tuple[str, str], Any], schemas: dict[str, Schema]
) -> dict[tuple[str, str], Any]:
    text = {"type": "string"}
    maybe_text = nullable(text)
    choice = closed(
        ["value", "name", "description", "group"],
        value=_VALUE,
        name=text,
        description=maybe_text,
        group=maybe_text,
    )
    schemas["ConfigOption"] = closed(
        ["id", "name", "description", "category", "type", "currentValue", "options"],
        id=text,
        name=text,
        description=maybe_text,
        category=maybe_text,
        type={"enum": ["select", "boolean"]},
        currentValue=nullable(_VALUE),
        options={"type": "array", "items": choice},
    )
    mode = closed(["id", "name", "description"], id=text, name=text, description=maybe_text)
    schemas["Controls"] = closed(
        ["modes", "config", "commands", "promptCapabilities", "mcpServers"],
        modes=nullable(
            closed(
                ["currentModeId", "available"],
                currentModeId=maybe_text,
                available={"type": "array", "items": mode},
            )
        ),
        config={"type": "array", "items": ref("ConfigOption")},
        commands={
            "type": "array",
            "items": closed(
                ["name", "description", "inputHint"],
                name=text,
                description=text,
                inputHint=maybe_text,
            ),
        },
        promptCapabilities=closed(
            ["image", "audio", "embeddedContext"],
            image={"type": "boolean"},
            audio={"type": "boolean"},
            embeddedContext={"type": "boolean"},
        ),
        mcpServers={"type": "array", "items": text},
    )
    session = schemas["Session"]
    session["properties"]["controls"] = ref("Controls")  # the shape holds a plain object
    if "controls" not in session["required"]:
        session["required"].append("controls")

    controls = json_response("The session's controls, as they are now.", ref("Controls"))
    added: dict[tuple[str, str], Any] = {}
    added[("GET", "/api/sessions/{sessionId}/controls")] = op(
        "The agent's modes, config options, commands and prompt capabilities",
        {200: controls},
        params=[SESSION],
        errors=[503],
    )
    added[("PUT", "/api/sessions/{sessionId}/mode")] = op(
        "Switch the agent's mode (ACP session/set_mode; also during a turn)",
        {200: controls},
        params=[SESSION],
        body=request_body(body_schema(shapes.ModeBody)),
        errors=[409, 502, 503],
    )
    added[("PUT", "/api/sessions/{sessionId}/config/{configId}")] = op(
        "Set one of the agent's config options (ACP session/set_config_option)",
        {200: controls},
        params=[
            SESSION,
            {
                **path_param("configId", "A config option id (see controls)."),
                "schema": {"type": "string", "minLength": 1},
            },
        ],
        body=request_body(body_schema(shapes.ConfigBody)),
        errors=[409, 502, 503],
    )
    added[("POST", "/api/sessions/{sessionId}/elicitations/{requestId}")] = op(
        "Answer the agent's elicitation: accept (a form with content matching its "
        "requestedSchema), decline or cancel; the first answer wins",
        {
            200: json_response(
                "Answered; the outcome given to the agent.",
                closed(
                    ["requestId", "outcome"],
                    requestId=UUID,
                    outcome=obj(
                        ["action"],
                        action={"enum": ["accept", "decline", "cancel"]},
                        content={"type": "object"},
                    ),
                ),
            )
        },
        params=[SESSION, path_param("requestId", "The requestId of an elicitation message.")],
        body=request_body(body_schema(shapes.ElicitationAnswer)),
        errors=[409, 503],
    )
    _prompt_content(catalogue, added)
    return added


def _prompt_content(
    catalogue: dict[tuple[str, str], Any], added: dict[tuple[str, str], Any]
) -> None:
    """API.md "Prompt content" and Sessions: the files for @-mentions, the attachments
    (the prompt body is shapes.PromptBody)."""
    added[("GET", "/api/sessions/{sessionId}/files")] = op(
        "Files of the session's workspace matching a query (for @-mentions), best first",
        {
            200: json_response(
                "Paths relative to the workspace.",
                closed(["files"], files={"type": "array", "items": {"type": "string"}}),
            )
        },
        params=[
            SESSION,
            query("query", {"type": "string"}, "Case-insensitive subsequence of the path."),
            int_param("limit", 1, 1000),
        ],
        errors=[409, 503],
    )
    added[("GET", "/api/sessions/{sessionId}/attachments/{sha256}")] = op(
        "An image a prompt carried, with its content type",
        {
            200: {
                "description": "The image's bytes.",
                "content": {"image/*": {"schema": {"type": "string", "format": "binary"}}},
            }
        },
        params=[
            SESSION,
            {
                **path_param("sha256", "The image's sha256 (64 lowercase hex digits)."),
                "schema": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
            },
        ],
        errors=[503],
    )
