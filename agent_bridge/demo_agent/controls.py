"""What the demo agent lets a client drive: modes, a model option, slash commands.

Modes change how it answers: ``code`` (the default) answers as always, ``ask`` prefixes
its answer with ``[ask mode]``. The ``model`` option only names the model in ``/help``.
With the ``legacy-models`` start flag the model comes as the older ``models`` block and
is set through ``session/set_model`` instead of a config option.
"""

from __future__ import annotations

from .wire import JsonObject

__all__ = [
    "COMMANDS",
    "MODELS",
    "MODES",
    "SessionControls",
    "answer_prefix",
    "session_answer",
    "slash_reply",
]

MODES: list[JsonObject] = [
    {"id": "code", "name": "Code", "description": "Reads and writes files as asked."},
    {"id": "ask", "name": "Ask", "description": "Answers only; marks every answer [ask mode]."},
]
MODELS: list[JsonObject] = [
    {"value": "demo-small", "name": "Demo small", "description": "Fast and terse."},
    {"value": "demo-large", "name": "Demo large", "description": "Slow and thorough."},
]
COMMANDS: list[JsonObject] = [
    {"name": "help", "description": "What this agent can do", "input": None},
    {"name": "files", "description": "List the workspace's files", "input": {"hint": "glob"}},
]


class SessionControls:
    """One session's current mode and model."""

    def __init__(self) -> None:
        self.mode_id = "code"
        self.model = "demo-small"

    def config_options(self) -> list[JsonObject]:
        return [
            {
                "id": "model",
                "name": "Model",
                "description": "Which demo model answers",
                "category": "model",
                "type": "select",
                "currentValue": self.model,
                "options": MODELS,
            }
        ]

    def set_mode(self, mode_id: object) -> bool:
        if mode_id not in {m["id"] for m in MODES}:
            return False
        self.mode_id = str(mode_id)
        return True

    def set_model(self, value: object) -> bool:
        if value not in {m["value"] for m in MODELS}:
            return False
        self.model = str(value)
        return True


def session_answer(controls: SessionControls, *, legacy_models: bool) -> JsonObject:
    """The modes and config options (or legacy models) of a session/new|load answer."""
    answer: JsonObject = {"modes": {"currentModeId": controls.mode_id, "availableModes": MODES}}
    if legacy_models:
        answer["models"] = {
            "currentModelId": controls.model,
            "availableModels": [
                {"modelId": m["value"], "name": m["name"], "description": m["description"]}
                for m in MODELS
            ],
        }
    else:
        answer["configOptions"] = controls.config_options()
    return answer


def answer_prefix(controls: SessionControls) -> str:
    return "[ask mode] " if controls.mode_id == "ask" else ""


def slash_reply(text: str, controls: SessionControls, files: list[str]) -> str | None:
    """The answer to a slash command, or None when the text is not one."""
    words = text.split()
    if not words or not words[0].startswith("/"):
        return None
    name = words[0][1:]
    if name == "help":
        return (
            f"Demo agent, mode {controls.mode_id}, model {controls.model}. Commands: "
            + ", ".join(f"/{c['name']}" for c in COMMANDS)
        )
    if name == "files":
        return "Files: " + (", ".join(files) if files else "(none)")
    return None


def describe_blocks(prompt: list[object]) -> list[str]:
    """What the demo agent says it was given besides text (images, files)."""
    seen: list[str] = []
    for block in prompt:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "image":
            size = len(str(block.get("data") or "")) * 3 // 4
            seen.append(f"[image {block.get('mimeType')} ~{size} bytes]")
        elif kind == "resource":
            resource = block.get("resource") or {}
            text = str(resource.get("text") or "")
            seen.append(f"[embedded {resource.get('uri')}: {len(text)} chars: {text[:40]!r}]")
        elif kind == "resource_link":
            seen.append(f"[link {block.get('uri')}]")
    return seen
