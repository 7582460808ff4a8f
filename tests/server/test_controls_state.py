"""server.sessions.live.controls_state and the translator's controls messages, without an agent:
the shapes real agents send (groups, boolean options, the legacy models block)."""

from __future__ import annotations

import pytest

from server.sessions.errors import Conflict, Invalid, NotFound
from server.sessions.live.controls_state import ControlsState
from server.sessions.live.translate import Translator

ANSWER = {
    "sessionId": "s",
    "modes": {
        "currentModeId": "default",
        "availableModes": [{"id": "default", "name": "Default"}, {"id": "plan", "name": "Plan"}],
    },
    "configOptions": [
        {
            "id": "effort",
            "name": "Reasoning effort",
            "category": "thought_level",
            "type": "select",
            "currentValue": "medium",
            "options": [
                {"group": "fast", "name": "Fast", "options": [{"value": "low", "name": "Low"}]},
                {"value": "medium", "name": "Medium"},
            ],
        },
        {"id": "web", "name": "Web search", "type": "boolean", "currentValue": False},
    ],
    "models": {"currentModelId": "m1", "availableModels": [{"modelId": "m1", "name": "M1"}]},
}


def test_answer_flattens_groups_and_maps_legacy_models() -> None:
    state = ControlsState()
    state.apply_answer(ANSWER)
    effort, web, model = state.config
    assert [(c["value"], c["group"]) for c in effort["options"]] == [
        ("low", "fast"),
        ("medium", None),
    ]
    assert web["type"] == "boolean" and web["options"] == []
    assert model["id"] == "model" and model["currentValue"] == "m1" and state.legacy_model
    assert state.view()["modes"]["available"][1] == {
        "id": "plan",
        "name": "Plan",
        "description": None,
    }


def test_checks() -> None:
    state = ControlsState()
    with pytest.raises(Conflict) as no_modes:
        state.check_mode("plan")
    assert no_modes.value.code == "not_supported"
    state.apply_answer(ANSWER)
    state.check_mode("plan")
    with pytest.raises(Invalid):
        state.check_mode("yolo")
    with pytest.raises(NotFound) as missing:
        state.check_value("temperature", "x")
    assert missing.value.code == "config_option_not_found"
    state.check_value("effort", "low")
    state.check_value("web", True)
    for config_id, value in (("effort", "max"), ("effort", True), ("web", "yes"), ("model", 1)):
        with pytest.raises(Invalid):
            state.check_value(config_id, value)


def test_translator_emits_only_changes() -> None:
    translator = Translator()
    translator.controls.apply_answer(ANSWER)
    out = translator.translate(
        {"sessionUpdate": "current_mode_update", "currentModeId": "plan"}, {}
    )
    assert len(out) == 1 and out[0].content["type"] == "controls"
    assert out[0].content["change"] == "mode" and out[0].content["by"] == "agent"
    assert out[0].content["controls"]["modes"]["currentModeId"] == "plan"
    again = translator.translate(
        {"sessionUpdate": "current_mode_update", "currentModeId": "plan"}, {}
    )
    assert again == []
    commands = {
        "sessionUpdate": "available_commands_update",
        "availableCommands": [{"name": "review", "description": "Review", "input": {"hint": "x"}}],
    }
    out = translator.translate(commands, {})
    assert out[0].content["controls"]["commands"] == [
        {"name": "review", "description": "Review", "inputHint": "x"}
    ]
    update = {"sessionUpdate": "config_option_update", "configOptions": ANSWER["configOptions"][:1]}
    out = translator.translate(update, {})
    ids = [o["id"] for o in out[0].content["controls"]["config"]]
    assert ids == ["effort", "model"]  # the legacy model option stays
