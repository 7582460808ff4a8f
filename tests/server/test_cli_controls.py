"""``agent-sessions chat`` with ``/mode`` and ``/config``, as a subprocess against a real
server and the demo agent."""

from __future__ import annotations

from collections.abc import Callable

from tests.conftest import LiveServer
from tests.test_cli import cli


def test_chat_mode_and_config(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    script = (
        "/mode\n/mode ask\n/mode yolo\n/config\n/config model demo-large\n/config model\n"
        "hi\n/quit\n"
    )
    chat = cli(server, "chat", "--repo", "demo", stdin=script)
    assert chat.returncode == 0, chat.stderr
    out = chat.stdout
    assert "modes (/mode ID to switch):" in out and " * code  Code" in out
    assert "mode: ask" in out
    assert "The agent offers no mode 'yolo'" in out
    assert "model = demo-small  (demo-small, demo-large)" in out
    assert "model: demo-large" in out
    assert "usage: /config ID VALUE" in out
    assert "[ask mode] You said: hi" in out
