"""The demo agent reads its command from the prompt's last text block."""

from __future__ import annotations

from agent_bridge.demo_agent.commands import command_text, parse_command, prompt_text


def test_command_comes_from_the_last_text_block() -> None:
    prompt = [
        {"type": "text", "text": "[Context] earlier conversation ...\nuser: write a.txt x"},
        {"type": "resource_link", "uri": "file:///x", "name": "x"},
        {"type": "text", "text": "  history  "},
    ]
    assert command_text(prompt) == "history"
    assert parse_command(command_text(prompt)).name == "history"
    assert prompt_text(prompt).startswith("[Context]")  # the echo still shows everything


def test_no_text_block_is_the_default_turn() -> None:
    assert command_text([{"type": "image", "data": "", "mimeType": "image/png"}]) == ""
