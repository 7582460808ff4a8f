"""No token reaches a log line: uvicorn writes a WebSocket's URL, ``?token=`` included,
in its "[accepted]" line (also with access_log off), and a request line carries its
query. Checked on a real server's log, with the token sent both ways."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import websockets

from tests.conftest import LiveServer

TOKEN = "as_TheSecretTokenValue0123456789abcdef"


def test_no_token_in_the_log(live_server: Callable[..., LiveServer]) -> None:
    server = live_server(API_TOKEN=TOKEN, LOG_LEVEL="debug", LOG_FORMAT="text")
    headers = {"Authorization": f"Bearer {TOKEN}"}
    repos = httpx.get(f"{server.url}/api/repos", headers=headers, timeout=10).json()["repos"]
    created = httpx.post(
        f"{server.url}/api/sessions", json={"repoId": repos[0]["id"]}, headers=headers, timeout=30
    )
    assert created.status_code == 201, created.text
    session_id = created.json()["id"]
    # a URL with the token in its query, refused or not
    httpx.get(f"{server.url}/api/sessions?token={TOKEN}", timeout=10)

    async def view() -> None:
        url = f"{server.ws_url}/ws/sessions/{session_id}?after=0&token={TOKEN}"
        async with websockets.connect(url, origin=server.url) as socket:  # type: ignore[arg-type]
            hello = await socket.recv()
            assert "hello" in str(hello)

    asyncio.run(view())
    assert server.stop() == 0
    log = server.log()
    assert '"WebSocket /ws/sessions/' in log  # the line that carried it is there
    assert "token=[redacted]" in log
    assert TOKEN not in log
    assert TOKEN[3:20] not in log


def test_every_spelling_is_redacted() -> None:
    from server.logs import redact

    lines = {
        f'"WebSocket /ws/sessions/x?after=3&token={TOKEN}" [accepted]': "token=[redacted]",
        f"GET /x?Token={TOKEN}&a=1": "Token=[redacted]&a=1",
        f"url=%2Fws%3Ftoken%3D{TOKEN}%26after%3D0": "token%3D[redacted]%26after",
        f"Authorization: Bearer {TOKEN}": "Bearer [redacted]",
        f"/cb?access_token={TOKEN}": "access_token=[redacted]",
    }
    for line, kept in lines.items():
        assert TOKEN not in redact(line)
        assert kept in redact(line), redact(line)
    assert redact("input_tokens=5 tokens=3") == "input_tokens=5 tokens=3"
