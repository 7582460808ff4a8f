"""``agent-sessions chat`` with ``/mode`` and ``/config``, as a subprocess against a real
server and the demo agent."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx

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


def test_chat_attach(live_server: Callable[..., LiveServer], tmp_path: Path) -> None:
    image = tmp_path / "shot.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(40))
    server = live_server()
    script = f"/attach\n/attach {image}\n/attach README.md\nlook\n/attach ../x\nagain\n/quit\n"
    chat = cli(server, "chat", "--repo", "demo", stdin=script)
    assert chat.returncode == 0, chat.stderr
    out = chat.stdout
    assert "usage: /attach PATH" in out
    assert "(2 pending)" in out
    assert "You said: look [image image/png" in out and "[embedded file://" in out
    assert "the server refused: The file is outside the session's workspace." in out


def test_chat_answers_the_agents_questions(
    live_server: Callable[..., LiveServer], workspace_root: Path
) -> None:
    server = live_server()
    script = (
        "save draft.txt hello\nchosen.txt\nmaybe\nn\n"  # a form: a name, a bad yes/no, then no
        "save other.txt x\n!decline\n"
        "elicit url https://example.test/go\n\n/quit\n"
    )
    chat = cli(server, "chat", "--repo", "demo", stdin=script)
    assert chat.returncode == 0, chat.stderr
    out = chat.stdout
    assert "? the agent asks: Save draft.txt? Choose the file name." in out
    assert "answer y or n" in out
    assert "question answered: accept" in out and "question answered: decline" in out
    assert "I did not save other.txt (declined by user)." in out
    assert "open https://example.test/go" in out
    assert 'Elicitation answer: {"action": "accept"}' in out
    assert (workspace_root / "demo" / "chosen.txt").read_text() == "hello"
    assert not (workspace_root / "demo" / "other.txt").exists()


def test_chat_answers_a_client_tool_call(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    schema = {"type": "object", "properties": {"colour": {"type": "string"}}}
    tools = [{"name": "pick", "description": "Pick a colour", "inputSchema": schema}]
    with httpx.Client(base_url=server.url, timeout=30) as http:
        repo_id = http.get("/api/repos").json()["repos"][0]["id"]
        created = http.post("/api/sessions", json={"repoId": repo_id, "clientTools": tools})
        assert created.status_code == 201, created.text
    script = (
        'client-tool pick {"colour": "red"}\nnot json\n{"picked": "red"}\n'
        'client-tool pick {"colour": "green"}\n! the person closed it\n/quit\n'
    )
    chat = cli(server, "chat", "--resume", created.json()["id"], stdin=script)
    assert chat.returncode == 0, chat.stderr
    out = chat.stdout
    assert "? the agent waits on a client: tool pick" in out
    assert 'input: {"colour": "red"}' in out
    assert "that is not JSON" in out
    assert "client tool pick: answered" in out
    assert 'pick answered: {"picked":"red"}' in out
    assert "pick failed: the person closed it" in out
