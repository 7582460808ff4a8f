"""Fuzzing the agent side: a scripted agent subprocess writes arbitrary JSON-RPC traffic
(tests/fuzz/traffic.py) to the real ACP client, alone and through the real server.

Properties: nothing raises or answers 500 and the server goes on; every request of the
agent gets exactly one answer, by id; the session goes on (its run completes); the seq
log stays gap-free; no process of the session is left once it ends.

A fixed seed (derandomize) and a small budget keep this directory under a minute; set
FUZZ_EXAMPLES=N to go deeper.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from starlette.testclient import TestClient

from agent_bridge import AcpClient, ProcessSpec, Workspace, agent_environment, connect_agent
from agent_bridge.orphans import SESSION_ENV
from server.app import create_app
from tests.fuzz.support import RAW_AGENT, answers, raw_agent, received
from tests.fuzz.traffic import Traffic, key, traffic
from tests.helpers import create_session, messages, processes_with_env, prompt, wait_for

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0"))
# A deeper run takes longer than the suite's per-test timeout allows.
pytestmark = pytest.mark.timeout(max(120, 3 * EXAMPLES))
FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


def examples(default: int) -> settings:
    return settings(FUZZ, max_examples=EXAMPLES or default)


def check_answers(got: list[dict[str, Any]], drawn: Traffic) -> None:
    """Exactly one answer per request, by id; what has no usable id gets an error."""
    by_id = Counter(key(a.get("id")) for a in got if a.get("id") is not None)
    assert by_id == drawn.expected, (by_id, drawn.expected)
    for answer in got:
        assert ("result" in answer) != ("error" in answer), answer
        if answer.get("id") is None:
            assert answer["error"]["code"] in (-32700, -32600), answer


class Callbacks:
    """The host's side, minimal: updates are taken, permissions answered at once."""

    def __init__(self) -> None:
        self.updates = 0

    async def on_session_update(
        self, update: dict[str, Any], raw: dict[str, Any], *, replayed: bool
    ) -> None:
        json.dumps(raw)  # what the client hands on can be encoded
        self.updates += 1

    async def on_permission_request(self, params: dict[str, Any], raw: dict[str, Any]) -> Any:
        async def outcome() -> dict[str, Any]:
            return {"outcome": "cancelled"}

        return outcome()


def test_acp_client_answers_every_request(tmp_path: Path) -> None:
    """The ACP client alone (agent_bridge), against arbitrary traffic."""
    folder = tmp_path / "agent"
    raw_agent(folder, [])
    repo = tmp_path / "repo"
    repo.mkdir()

    @examples(40)
    @given(lines=traffic())
    def run(lines: Traffic) -> None:
        steps = lines.steps
        (folder / "script.json").write_text(json.dumps([[*steps, {"await": lines.ids}]]))
        (folder / "received.log").write_bytes(b"")

        async def main() -> None:
            client = AcpClient(Callbacks(), Workspace(repo), request_timeout=30)
            env = agent_environment(os.environ, {}, "fuzz-acp-client", "fuzz")
            argv = [sys.executable, str(RAW_AGENT), str(folder)]
            spec = ProcessSpec(argv=argv, cwd=repo, env=env)
            async with connect_agent(spec, client, max_line_bytes=1 << 24, stop_grace=1) as conn:
                client.bind(conn)
                with anyio.fail_after(10):
                    await client.initialize()
                    await client.new_session()
                    result = await client.prompt([{"type": "text", "text": "go"}])
                assert result["stopReason"] == "end_turn"
                assert not conn.exited.is_set()

        anyio.run(main)
        check_answers(answers(folder), lines)

    run()


def tail(client: TestClient, sid: str) -> list[Any]:
    """The session's last few messages, for a failure's explanation."""
    return [m["content"] for m in messages(client, sid)[-5:]]


@pytest.mark.filterwarnings(
    "ignore:Generating overly large repr:hypothesis.errors.HypothesisWarning"
)
def test_server_survives_arbitrary_agent_traffic(make_settings, tmp_path: Path) -> None:
    """Through the real server (the app in-process, real agent subprocesses)."""
    folder = tmp_path / "agent"
    command = raw_agent(folder, [])
    # A limit no example reaches: a failing example must not fail the next ones (while
    # hypothesis shrinks) with session_limit_reached instead of its own error.
    app = create_app(
        make_settings(AGENT_COMMAND=command, PERMISSION_TIMEOUT=0.2, MAX_CONCURRENT_SESSIONS=50)
    )
    with TestClient(app) as client:  # raises what would be a 500
        repo = client.get("/api/repos").json()["repos"][0]["id"]

        @examples(12)
        @given(lines=traffic())
        def run(lines: Traffic) -> None:
            steps = lines.steps
            (folder / "script.json").write_text(json.dumps([[*steps, {"await": lines.ids}]]))
            (folder / "received.log").write_bytes(b"")
            sid = create_session(client, repo)["id"]
            try:
                run_id = prompt(client, sid, "go")

                def run_ended() -> bool:
                    return client.get(f"/api/agent-runs/{run_id}").json()["status"] != "running"

                wait_for(run_ended, lambda: f"the run's end (last messages: {tail(client, sid)})")
                assert client.get(f"/api/agent-runs/{run_id}").json()["status"] == "completed"
                assert client.get(f"/api/sessions/{sid}").json()["status"] == "active"
                done = client.post(f"/api/sessions/{sid}/complete")
                assert done.status_code == 200, done.text
            finally:  # whatever happened, this example's agent goes (idempotent when done)
                client.delete(f"/api/sessions/{sid}")
            check_answers(answers(folder), lines)
            seqs = [m["seq"] for m in messages(client, sid)]
            assert seqs == list(range(1, len(seqs) + 1))
            assert processes_with_env(f"{SESSION_ENV}={sid}\0") == []
            assert [m for m in received(folder) if m.get("method") == "session/prompt"]

        run()
        assert client.get("/readyz").status_code == 200
