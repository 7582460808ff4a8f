"""An agent's usage numbers are checked where ACP is translated: whatever it reports
(beyond BIGINT, negative, not finite, strings), the run ends and is stored, the numbers
clamped or null, the raw frame kept; the server keeps taking sessions."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from server.app import create_app
from server.settings import Settings
from tests.hardening.support import agent_command, new_session, played, spec
from tests.helpers import messages

BIGINT = 2**63 - 1


@pytest.fixture
def agent_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "agent"
    folder.mkdir()
    return folder


@pytest.fixture
def client(make_settings: Callable[..., Settings], agent_dir: Path) -> Iterator[TestClient]:
    settings = make_settings(AGENT_COMMAND=agent_command(agent_dir))
    with TestClient(create_app(settings)) as test_client:
        yield test_client


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("100000000000000000000", None),  # 10^20: beyond BIGINT
        ("18446744073709551615", None),  # 2^64-1: an integer, beyond BIGINT
        ("9223372036854775808", None),  # 2^63
        ("-5", None),
        ("1.5e300", None),  # finite, far beyond (1e999 is refused with the frame: no JSON)
        ('"12"', None),
        ("12.7", 12),
        ("4503599627370495", 4503599627370495),
    ],
)
def test_run_end_stores_whatever_tokens_the_agent_reports(
    client: TestClient, raw: str, expected: int | None
) -> None:
    session_id = new_session(client)
    usage = '{"inputTokens": ' + raw + ', "outputTokens": 3}'
    run = played(client, session_id, spec(usage=usage))
    assert run["status"] == "completed", run
    tokens = run["usage"]["inputTokens"]
    if expected is None:
        assert tokens is None or 0 <= tokens <= 2**53 - 1, run["usage"]
    else:
        assert tokens == expected
    assert run["usage"]["outputTokens"] == 3
    # the session is fine and the server still takes sessions
    assert client.get(f"/api/sessions/{session_id}").json()["status"] == "active"
    second = client.post("/api/sessions", json={"repoId": run["repoId"]})
    assert second.status_code == 201, second.text
    stats = client.get("/api/stats", params={"groupBy": "status"})
    assert stats.status_code == 200, stats.text
    for bucket in stats.json()["buckets"]:
        assert all(0 <= v <= BIGINT for v in bucket["tokens"].values()), bucket


def test_usage_update_numbers_are_checked_and_the_frame_kept(client: TestClient) -> None:
    session_id = new_session(client)
    update = (
        '{"sessionUpdate": "usage_update", "used": 100000000000000000000, "size": -1, '
        '"cost": {"amount": 1e300, "currency": "USD"}}'
    )
    run = played(client, session_id, spec([update], '{"inputTokens": 5}'))
    assert run["status"] == "completed", run
    usage = [m for m in messages(client, session_id, raw="true") if m["content"]["type"] == "usage"]
    assert len(usage) == 1
    content = usage[0]["content"]
    assert content["size"] is None
    assert content["used"] is None or content["used"] <= 2**53 - 1
    assert content["cost"] is None
    raw = usage[0]["raw"]
    assert raw["params"]["update"]["used"] == 1e20  # the agent's frame, as it came
