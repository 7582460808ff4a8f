"""``agent-sessions usage`` against a real server holding the history of seed.py."""

from __future__ import annotations

from collections.abc import Callable

import httpx

from tests.conftest import LiveServer
from tests.stats.seed import seed
from tests.test_cli import cli


def test_usage_by_agent_and_by_day(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    repos = httpx.get(f"{server.url}/api/repos").json()["repos"]
    repo = next(r for r in repos if r["name"] == "demo")
    seed(server.env["DATABASE_URL"], repo["id"])

    result = cli(server, "usage", "--since", "2026-03-01", "--by", "agent")
    assert result.returncode == 0, result.stderr
    lines = [line.split() for line in result.stdout.splitlines()]
    assert lines[0][:3] == ["KEY", "RUNS", "DONE"]
    # KEY RUNS DONE FAILED TOOLS TOOL-ERR MEDIAN P95 TOTAL IN OUT CACHED COST
    assert lines[1] == ["alpha", "3", "1", "1", "3", "1", "0.2s", "0.3s", "0.4s"] + [
        "300",
        "30",
        "5",
        "0.3000",
        "USD",
    ]
    assert lines[2][:9] == ["beta", "3", "2", "1", "1", "1", "0.2s", "0.9s", "1.2s"]
    assert lines[2][9:] == ["60", "6", "1", "0.5000", "EUR", "+", "0.0100", "USD"]
    assert "from 2026-03-01T00:00:00.000Z" in result.stderr

    days = cli(server, "usage", "--since", "2026-03-01", "--by", "day", "--agent", "beta")
    assert [line.split()[:2] for line in days.stdout.splitlines()[1:]] == [
        ["2026-03-02", "2"],
        ["2026-03-09", "1"],
    ]
    named = cli(server, "usage", "--since", "2026-03-01", "--by", "repo")
    assert named.stdout.splitlines()[1].split()[:2] == ["demo", "6"]


def test_usage_refusals(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    bad_zone = cli(server, "usage", "--tz", "Mars/Olympus_Mons")
    assert bad_zone.returncode == 1
    assert "tz must be an IANA time zone" in bad_zone.stderr
    bad_since = cli(server, "usage", "--since", "a while")
    assert bad_since.returncode == 2
    assert "7d" in bad_since.stderr
    empty = cli(server, "usage", "--since", "1d")
    assert empty.returncode == 0
    assert empty.stdout == ""
    assert "no runs since" in empty.stderr
