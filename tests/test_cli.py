"""The ``agent-sessions`` client commands, run as subprocesses with piped stdin against a
real server (``live_server``) and the real demo agent."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson

from tests.conftest import ROOT, LiveServer, free_port, make_git_repo

MISSING = "00000000-0000-4000-8000-000000000000"
TOKEN = "s3cret-token"  # noqa: S105 - a test server's token


def cli(
    server: LiveServer | str,
    *args: str,
    stdin: str = "",
    token: str | None = None,
) -> subprocess.CompletedProcess[str]:
    url = server if isinstance(server, str) else server.url
    env = {k: v for k, v in os.environ.items() if k != "API_TOKEN"}
    if token:
        env["API_TOKEN"] = token
    command = [sys.executable, "-m", "server.cli", args[0], "--url", url, *args[1:]]
    return subprocess.run(
        command,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=env,
        check=False,
    )


def created_id(result: subprocess.CompletedProcess[str]) -> str:
    match = re.search(r"created session ([0-9a-f-]{36})", result.stderr)
    assert match, result.stderr
    return match.group(1)


def run_ends(server: LiveServer, session_id: str) -> list[dict[str, Any]]:
    page = httpx.get(
        f"{server.url}/api/sessions/{session_id}/messages", params={"type": "run"}
    ).json()
    return [m for m in page["messages"] if m["content"]["status"] != "running"]


def test_chat_through_a_turn_with_a_permission_question(
    live_server: Callable[..., LiveServer],
    workspace_root: Path,
) -> None:
    server = live_server(MAX_CONCURRENT_SESSIONS="2")
    chat = cli(server, "chat", "--repo", "demo", stdin="write notes.txt hello\n1\nhistory\n/quit\n")
    assert chat.returncode == 0, chat.stderr
    out = chat.stdout
    assert "? the agent asks permission: Write notes.txt" in out
    assert "1) Allow" in out and "3) Reject" in out and "permission: Allow" in out
    assert (
        "ok tool Write notes.txt (edit) completed" in out and "plan: [x] Read the workspace" in out
    )
    assert "agent: You said: write notes.txt hello" in out
    assert "History: write notes.txt hello" in out
    assert out.index("permission: Allow") < out.index("History:")
    assert (workspace_root / "demo" / "notes.txt").read_text() == "hello"
    sid = created_id(chat)
    assert f"chat --resume {sid}" in chat.stderr

    listing = cli(server, "sessions")
    assert listing.returncode == 0 and re.search(
        rf"^{sid}\s+active\s+demo\s+default\s", listing.stdout, re.M
    )
    assert (
        "no sessions" in cli(server, "sessions", "--repo", "demo", "--status", "completed").stderr
    )

    exported = cli(server, "export", sid)
    assert exported.returncode == 0
    assert exported.stdout.encode() == httpx.get(f"{server.url}/api/sessions/{sid}/export").content
    assert orjson.loads(exported.stdout.splitlines()[0])["id"] == sid

    # --resume continues; an unanswered permission question (EOF) cancels the turn.
    resumed = cli(server, "chat", "--resume", sid, stdin="resume-check\nwrite other.txt x\n")
    assert resumed.returncode == 0, resumed.stderr
    assert "You said: resume-check" in resumed.stdout
    assert (
        "(no answer: cancelling the turn)" in resumed.stdout
        and "(turn cancelled)" in resumed.stdout
    )
    assert not (workspace_root / "demo" / "other.txt").exists()

    # --copy up to the end of the first turn: the copy's agent gets that conversation.
    first_end = run_ends(server, sid)[0]["seq"]
    copied = cli(server, "chat", "--copy", sid, "--to-point", str(first_end), stdin="what now\n")
    assert copied.returncode == 0, copied.stderr
    assert "user: write notes.txt hello" in copied.stdout and "resume-check" not in copied.stdout
    copy_id = created_id(copied)
    copy = httpx.get(f"{server.url}/api/sessions/{copy_id}").json()
    assert copy["forkedFrom"] == {"sessionId": sid, "seq": first_end}

    # --overwrite drops the last prompt (the cancelled write) and its answer, then chats.
    overwritten = cli(server, "chat", "--overwrite", sid, stdin="again\n")
    assert overwritten.returncode == 0, overwritten.stderr
    assert f"rewound session {sid}" in overwritten.stderr
    assert (
        "user: resume-check" in overwritten.stdout and "write other.txt" not in overwritten.stdout
    )
    exported_after = [
        orjson.loads(line)
        for line in httpx.get(f"{server.url}/api/sessions/{sid}/export").content.splitlines()[1:]
    ]
    dropped = [m["content"] for m in exported_after if m["dropped"]]
    assert {"type": "text", "text": "write other.txt x"} in dropped

    # Refusals in plain words.
    refused = cli(server, "chat", "--repo", "demo", stdin="hi\n")
    assert refused.returncode == 1
    assert (
        "the server refused: too many active sessions (limit 2); try again in 60 s"
        in refused.stderr
    )
    missing = cli(server, "export", MISSING)
    assert missing.returncode == 1 and f"not found: No session with id {MISSING}" in missing.stderr
    point = cli(server, "chat", "--overwrite", sid, "--from-point", "100000")
    assert point.returncode == 1 and "the server refused: toSeq must be between 0" in point.stderr
    wrong = cli(server, "chat", "--resume", sid, "--to-point", "3")
    assert wrong.returncode == 1 and "--to-point goes with --copy" in wrong.stderr
    unreachable = cli(f"http://127.0.0.1:{free_port()}", "sessions")
    assert (
        unreachable.returncode == 1
        and "cannot reach the server at http://127.0.0.1:" in unreachable.stderr
    )


def test_token_from_the_environment_and_finished_sessions(
    live_server: Callable[..., LiveServer],
) -> None:
    server = live_server(API_TOKEN=TOKEN)
    refused = cli(server, "sessions")
    assert refused.returncode == 1 and "needs a valid token; pass --token" in refused.stderr
    chat = cli(server, "chat", "--repo", "demo", stdin="hello\n", token=TOKEN)
    assert chat.returncode == 0, chat.stderr
    assert "agent: You said: hello" in chat.stdout
    sid = created_id(chat)
    completed = httpx.post(
        f"{server.url}/api/sessions/{sid}/complete", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert completed.status_code == 200
    finished = cli(server, "chat", "--resume", sid, token=TOKEN)
    assert finished.returncode == 1
    assert "is completed; it takes no prompts" in finished.stderr
    assert f"Continue from a copy: agent-sessions chat --copy {sid}" in finished.stderr


def test_chat_on_a_path_not_registered_yet_registers_it_and_chats(
    live_server: Callable[..., LiveServer],
    workspace_root: Path,
) -> None:
    # Regression: the client died with a NameError (sys not imported) on this path.
    server = live_server(AUTO_REGISTER_REPOS="false")
    fresh = make_git_repo(workspace_root / "fresh")
    chat = cli(server, "chat", "--repo", str(fresh), stdin="hello there\n/quit\n")
    assert chat.returncode == 0, chat.stderr
    assert "NameError" not in chat.stderr
    assert f"registered repository {fresh}" in chat.stderr
    assert "agent: You said: hello there" in chat.stdout
    repos = httpx.get(f"{server.url}/api/repos").json()["repos"]
    assert [r["path"] for r in repos] == [str(fresh)]


def test_chat_on_an_over_long_path_says_why_without_a_traceback(
    live_server: Callable[..., LiveServer],
) -> None:
    # Issue 17, item 1: Path.exists() raised ENAMETOOLONG in the client itself.
    server = live_server(AUTO_REGISTER_REPOS="false")
    for spec in ("a" * 5000, "/".join(["a"] * 3000)):
        chat = cli(server, "chat", "--repo", spec, stdin="/quit\n")
        assert chat.returncode != 0
        assert "Traceback" not in chat.stderr, chat.stderr[-2000:]
        assert "validation_error" in chat.stderr or "cannot be used" in chat.stderr, chat.stderr
