"""A session's agent controls (API.md, Agent controls): modes, config options, slash
commands, prompt capabilities, MCP server names.

Pure and synchronous: ``ControlsState`` is built from the agent's answers and updates and
checks a client's choice before anything is sent to the agent. The older ``models`` block
(``currentModelId``, ``availableModels``) becomes a select option with id ``model`` that
is set through ``session/set_model``.
"""

from typing import Literal, TypedDict

from agent_bridge.jsontypes import JsonObject, JsonValue
from server.contents import (
    Change,
    Choice,
    Command,
    ConfigOption,
    ControlsView,
    Mode,
    Modes,
    PromptCapabilities,
)
from server.sessions.errors import Conflict, Invalid, NotFound

__all__ = [
    "CONTROL_UPDATES",
    "LEGACY_MODEL_ID",
    "Chosen",
    "ControlsState",
    "chosen_of",
    "empty_controls",
]

LEGACY_MODEL_ID = "model"
CONTROL_UPDATES = ("current_mode_update", "config_option_update", "available_commands_update")


class Chosen(TypedDict, total=False):
    """What is kept for resumption: the mode and config values the session was put in."""

    modeId: str
    config: dict[str, JsonValue]  # configId → value (a client's string or true/false)


def chosen_of(value: object) -> Chosen:
    """A stored ``agent_config`` column value, checked."""
    chosen: Chosen = {}
    if not isinstance(value, dict):
        return chosen
    if isinstance(value.get("modeId"), str):
        chosen["modeId"] = value["modeId"]
    config = value.get("config")
    if isinstance(config, dict):
        chosen["config"] = {str(k): v for k, v in config.items()}
    return chosen


def empty_controls() -> ControlsView:
    return ControlsState().view()


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _choices(raw: object) -> list[Choice]:
    """Select options, groups flattened (each keeps its group's name)."""
    out: list[Choice] = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("options"), list):
            group = _text(item.get("group")) or _text(item.get("name"))
            for inner in _choices(item["options"]):
                out.append({**inner, "group": inner["group"] or group})
        elif "value" in item:
            out.append(
                {
                    "value": item["value"],
                    "name": _text(item.get("name")) or str(item["value"]),
                    "description": _text(item.get("description")),
                    "group": _text(item.get("group")),
                }
            )
    return out


def _option(raw: object) -> ConfigOption | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        return None
    kind: Literal["select", "boolean"] = "boolean" if raw.get("type") == "boolean" else "select"
    return {
        "id": raw["id"],
        "name": _text(raw.get("name")) or raw["id"],
        "description": _text(raw.get("description")),
        "category": _text(raw.get("category")),
        "type": kind,
        "currentValue": raw.get("currentValue"),
        "options": _choices(raw.get("options")) if kind == "select" else [],
    }


def _modes(raw: object) -> Modes | None:
    if not isinstance(raw, dict):
        return None
    available: list[Mode] = [
        {
            "id": m["id"],
            "name": _text(m.get("name")) or m["id"],
            "description": _text(m.get("description")),
        }
        for m in raw.get("availableModes") or []
        if isinstance(m, dict) and isinstance(m.get("id"), str)
    ]
    return {"currentModeId": _text(raw.get("currentModeId")), "available": available}


def _legacy_models(raw: object) -> ConfigOption | None:
    if not isinstance(raw, dict):
        return None
    choices: list[Choice] = [
        {
            "value": m["modelId"],
            "name": _text(m.get("name")) or m["modelId"],
            "description": _text(m.get("description")),
            "group": None,
        }
        for m in raw.get("availableModels") or []
        if isinstance(m, dict) and isinstance(m.get("modelId"), str)
    ]
    return {
        "id": LEGACY_MODEL_ID,
        "name": "Model",
        "description": None,
        "category": "model",
        "type": "select",
        "currentValue": _text(raw.get("currentModelId")),
        "options": choices,
    }


def _commands(raw: object) -> list[Command]:
    out: list[Command] = []
    for c in raw if isinstance(raw, list) else []:
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            continue
        hint = c.get("input")
        out.append(
            {
                "name": c["name"],
                "description": _text(c.get("description")) or "",
                "inputHint": _text(hint.get("hint")) if isinstance(hint, dict) else None,
            }
        )
    return out


class ControlsState:
    """The controls as last known; ``legacy_model`` when ``model`` uses set_model."""

    def __init__(self, view: ControlsView | JsonObject | None = None) -> None:
        """From a view (``view()``), or the stored ``controls`` column holding one."""
        view = view or {}
        self.modes: Modes | None = view.get("modes")
        self.config: list[ConfigOption] = list(view.get("config") or [])
        self.commands: list[Command] = list(view.get("commands") or [])
        stored = view.get("promptCapabilities")  # as it was stored, never merged
        self.prompt_capabilities: PromptCapabilities = (
            {**stored} if stored else {"image": False, "audio": False, "embeddedContext": False}
        )
        # names; and client-tools as {name, transport, offered: false} when not offered
        self.mcp_servers: list[str | JsonObject] = list(view.get("mcpServers") or [])
        self.legacy_model = False

    def view(self) -> ControlsView:
        return {
            "modes": self.modes,
            "config": self.config,
            "commands": self.commands,
            "promptCapabilities": self.prompt_capabilities,
            "mcpServers": self.mcp_servers,
        }

    # -- from the agent ----------------------------------------------------------------

    def apply_capabilities(self, agent_capabilities: JsonObject) -> None:
        caps = agent_capabilities.get("promptCapabilities")
        caps = caps if isinstance(caps, dict) else {}
        self.prompt_capabilities = {
            "image": caps.get("image") is True,
            "audio": caps.get("audio") is True,
            "embeddedContext": caps.get("embeddedContext") is True,
        }

    def apply_answer(self, result: JsonObject) -> None:
        """session/new, load or resume answered: its modes and options replace ours."""
        self.modes = _modes(result.get("modes"))
        options = [o for o in map(_option, result.get("configOptions") or []) if o]
        legacy = _legacy_models(result.get("models"))
        self.legacy_model = legacy is not None and not any(
            o["id"] == LEGACY_MODEL_ID for o in options
        )
        if self.legacy_model and legacy is not None:
            options.append(legacy)
        self.config = options

    def apply_update(self, update: JsonObject) -> Change | None:
        """A session/update of the controls: what it changed (None: nothing)."""
        before = self.view()
        change = self._apply(update)
        return change if self.view() != before else None

    def _apply(self, update: JsonObject) -> Change | None:
        kind = update.get("sessionUpdate")
        if kind == "current_mode_update":
            mode_id = _text(update.get("currentModeId"))
            if self.modes is None:
                self.modes = {"currentModeId": mode_id, "available": []}
            else:
                self.modes = {**self.modes, "currentModeId": mode_id}
            return "mode"
        if kind == "config_option_update":
            self.set_options(update.get("configOptions"))
            return "config"
        if kind == "available_commands_update":
            self.commands = _commands(update.get("availableCommands"))
            return "commands"
        return None

    def set_options(self, raw: object) -> None:
        """A full configOptions list (an update or a set_config_option answer); the
        legacy model option stays."""
        options = [o for o in map(_option, raw if isinstance(raw, list) else []) if o]
        if self.legacy_model:
            options += [o for o in self.config if o["id"] == LEGACY_MODEL_ID]
        self.config = options

    def set_current(self, config_id: str, value: JsonValue) -> None:
        self.config = [
            {**o, "currentValue": value} if o["id"] == config_id else o for o in self.config
        ]

    # -- a client's choice ---------------------------------------------------------------

    def current_mode(self) -> str | None:
        return self.modes.get("currentModeId") if self.modes else None

    def check_mode(self, mode_id: str) -> None:
        if self.modes is None or not self.modes.get("available"):
            raise Conflict("not_supported", "This agent offers no modes.")
        offered = [m["id"] for m in self.modes["available"]]
        if mode_id not in offered:
            raise Invalid(f"The agent offers no mode {mode_id!r}.", offered=offered, field="modeId")

    def option(self, config_id: str) -> ConfigOption:
        for option in self.config:
            if option["id"] == config_id:
                return option
        raise NotFound("config_option", config_id)

    def check_value(self, config_id: str, value: JsonValue) -> ConfigOption:
        """The option, once ``value`` is one it offers (404 / 422 otherwise)."""
        option = self.option(config_id)
        if option["type"] == "boolean":
            if not isinstance(value, bool):
                raise Invalid(f"Option {config_id!r} takes true or false.", field="value")
            return option
        offered = [c["value"] for c in option["options"]]
        if isinstance(value, bool) or value not in offered:
            raise Invalid(
                f"Option {config_id!r} offers no value {value!r}.", offered=offered, field="value"
            )
        return option

    def differs(self, config_id: str, value: JsonValue) -> bool:
        return any(o["id"] == config_id and o["currentValue"] != value for o in self.config)
