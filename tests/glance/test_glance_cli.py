"""``agent-sessions sessions --search``, ``archive`` and ``purge`` as subprocesses
against a real server and the demo agent."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from tests.conftest import LiveServer
from tests.test_cli import MISSING, cli, created_id


def test_search_archive_and_purge_from_the_command_line(
    live_server: Callable[..., LiveServer],
) -> None:
    server = live_server()
    chat = cli(server, "chat", "--repo", "demo", stdin="find the pangolin\n")
    assert chat.returncode == 0, chat.stderr
    sid = created_id(chat)

    found = cli(server, "sessions", "--search", "pangolin")
    assert found.returncode == 0, found.stderr
    assert sid in found.stdout
    assert "[pangolin]" in found.stdout  # the snippet, its match marked
    assert "find the pangolin" in found.stdout  # the title from the first prompt

    refused = cli(server, "archive", sid)
    assert refused.returncode == 1 and "active" in refused.stderr
    assert httpx.post(f"{server.url}/api/sessions/{sid}/complete").status_code == 200
    archived = cli(server, "archive", sid)
    assert archived.returncode == 0 and "archived" in archived.stderr, archived.stderr
    assert sid not in cli(server, "sessions").stdout
    assert sid in cli(server, "sessions", "--archived", "true").stdout
    assert sid in cli(server, "sessions", "--sort", "activity", "--archived", "all").stdout

    purged = cli(server, "purge", sid)
    assert purged.returncode == 0 and "purged" in purged.stderr, purged.stderr
    assert httpx.get(f"{server.url}/api/sessions/{sid}").status_code == 404
    missing = cli(server, "purge", MISSING)
    assert missing.returncode == 1 and "session" in missing.stderr
