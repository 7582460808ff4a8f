"""An agent that breaks the protocol: the session ends at once, as ``error`` with
reason ``agent_protocol_error``, and nothing waits on the dead agent."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from server.app import create_app
from tests.fuzz.support import alive, line, pid_from, raw_agent, write
from tests.helpers import create_session, live_agent_pid, messages, pid_gone, prompt
from tests.server.test_ws import open_stream, receive_until

PERMISSION = {
    "id": "perm-1",
    "method": "session/request_permission",
    "params": {
        "sessionId": "raw",
        "toolCall": {"toolCallId": "t1", "title": "Run", "kind": "execute", "status": "pending"},
        "options": [
            {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ],
    },
}


def test_line_over_the_limit_ends_session_run_and_permissions(
    make_settings, tmp_path: Path
) -> None:
    """A permission is pending when the agent writes a line over MAX_AGENT_LINE_BYTES and
    then hangs, and a process it detached holds its stdout: the run fails, the session
    goes to error with reason agent_protocol_error, the permission is answered, and a
    viewer sees all of it."""
    folder = tmp_path / "agent"
    over = b'{"jsonrpc":"2.0","method":"session/update","params":{"x":"' + b"a" * 300_000
    daemon = tmp_path / "daemon.pid"
    steps = [{"detach": str(daemon)}, write(line(PERMISSION)), write(over), {"hang": True}]
    command = raw_agent(folder, [steps])
    settings = make_settings(AGENT_COMMAND=command, MAX_AGENT_LINE_BYTES=100_000)
    with TestClient(create_app(settings)) as client:
        repo = client.get("/api/repos").json()["repos"][0]["id"]
        sid = create_session(client, repo)["id"]
        pid = live_agent_pid(client, sid)
        with client.websocket_connect(f"/ws/sessions/{sid}") as ws:
            open_stream(ws)
            run = prompt(client, sid, "go")

            def is_error_status(frame: dict) -> bool:
                content = frame.get("message", {}).get("content", {})
                return content.get("type") == "status" and content.get("status") == "error"

            seen = receive_until(ws, is_error_status)
        status = seen[-1]["message"]["content"]
        assert status["reason"] == "agent_protocol_error"
        assert "over the limit" in status["detail"]["message"]
        contents = [f["message"]["content"] for f in seen if f["type"] == "message"]
        run_end = [c for c in contents if c["type"] == "run" and c["status"] != "running"]
        assert [(c["runId"], c["status"]) for c in run_end] == [(run, "failed")]
        decided = [c for c in contents if c["type"] == "permission" and c["outcome"] is not None]
        assert [d["outcome"] for d in decided] == [{"outcome": "cancelled"}]
        record = client.get(f"/api/sessions/{sid}").json()
        assert record["status"] == "error"
        assert client.get(f"/api/agent-runs/{run}").json()["status"] == "failed"
        assert messages(client, sid)[-1]["content"] == status
        assert pid_gone(pid)
        assert not alive(pid_from(daemon))  # it went with its session
