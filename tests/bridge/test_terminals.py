"""ACP terminal/* (agent_bridge.terminals): output limit and UTF-8 truncation, exit
status, kill, release, working-directory confinement, the per-session cap, the
environment, and cleanup of whole process groups. Real processes, real Workspace."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_bridge import OutputBuffer, RpcError, TerminalHost, Workspace
from agent_bridge.process import OWNER_ENV, SESSION_ENV
from agent_bridge.terminals import RESOURCE_NOT_FOUND, TERMINAL_LIMIT_REACHED
from tests.helpers import process_state, wait_for
from tests.traversal_payloads import ESCAPES, TRAVERSAL_PAYLOADS, make_traversal_tree

pytestmark = pytest.mark.anyio

BASE_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "LANG": "C.UTF-8",
    OWNER_ENV: "test-owner",
    SESSION_ENV: "test-session",
}


def wait_gone(pids: list[int], timeout: float = 10) -> None:
    """Poll /proc (with a deadline) until none of ``pids`` exists, not even as a zombie."""
    wait_for(
        lambda: all(process_state(p) is None for p in pids),
        lambda: {p: process_state(p) for p in pids},
        timeout,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "sub").mkdir(parents=True)
    return root


@pytest.fixture
async def host(repo: Path) -> AsyncIterator[TerminalHost]:
    terminals = TerminalHost(Workspace(repo), base_env=BASE_ENV, max_terminals=4)
    try:
        yield terminals
    finally:
        await terminals.close()


async def run(host: TerminalHost, command: str, *args: str, **params: Any) -> dict[str, Any]:
    """create → wait_for_exit → output → release; returns the output result."""
    created = await host.handle(
        "terminal/create", {"command": command, "args": list(args), **params}
    )
    ref = {"terminalId": created["terminalId"]}
    status = await host.handle("terminal/wait_for_exit", ref)
    output = await host.handle("terminal/output", ref)
    assert output["exitStatus"] == status
    await host.handle("terminal/release", ref)
    return dict(output)


async def first_line(host: TerminalHost, terminal_id: str) -> str:
    with anyio.fail_after(10):
        # terminal/output is a poll by design (ACP has no output event)
        while "\n" not in (  # noqa: ASYNC110
            text := (await host.handle("terminal/output", {"terminalId": terminal_id}))["output"]
        ):
            await anyio.sleep(0.01)
    return str(text)


# -- the output buffer (sans-I/O) ------------------------------------------------------------

EURO = "€"  # 3 bytes in UTF-8
SMILE = "😀"  # 4 bytes


@pytest.mark.parametrize(
    ("chunks", "limit", "text", "truncated"),
    [
        ([b"hello"], 10, "hello", False),
        ([b"hello"], 5, "hello", False),
        ([b"hello world"], 5, "world", True),
        ([b"ab", b"cd", b"ef"], 3, "def", True),
        ([b"abc"], 0, "", True),
        ([(EURO * 3).encode()], 7, EURO * 2, True),  # 9 bytes → cut inside the first €
        ([(EURO * 3).encode()], 6, EURO * 2, True),  # exactly on a boundary
        ([(EURO * 3).encode()], 2, "", True),  # not even one whole character fits
        ([("a" + SMILE).encode()], 4, SMILE, True),
        ([("a" + SMILE).encode()], 3, "", True),
        ([("é" * 4).encode()[:5], ("é" * 4).encode()[5:]], 5, "éé", True),  # split mid-char
        ([b"ok\xff\xfe"], 10, "ok\ufffd\ufffd", False),  # invalid bytes are replaced
    ],
)
def test_output_buffer_keeps_the_tail_at_a_character_boundary(
    chunks: list[bytes], limit: int, text: str, truncated: bool
) -> None:
    buffer = OutputBuffer(limit)
    for chunk in chunks:
        buffer.append(chunk)
    assert len(buffer) <= limit
    assert buffer.text(final=True) == text
    assert buffer.truncated is truncated


def test_output_buffer_holds_back_an_incomplete_character_while_running() -> None:
    buffer = OutputBuffer(100)
    buffer.append("x€".encode()[:2])
    assert buffer.text(final=False) == "x"
    buffer.append("€".encode()[1:])
    assert buffer.text(final=False) == "x€"


# -- create, output, exit status -------------------------------------------------------------


@pytest.mark.parametrize(
    ("script", "status"),
    [
        ("exit 0", {"exitCode": 0, "signal": None}),
        ("exit 3", {"exitCode": 3, "signal": None}),
        ("kill -TERM $$", {"exitCode": None, "signal": "SIGTERM"}),
        ("kill -KILL $$", {"exitCode": None, "signal": "SIGKILL"}),
    ],
)
async def test_exit_status(host: TerminalHost, script: str, status: dict[str, Any]) -> None:
    output = await run(host, "sh", "-c", script)
    assert output["exitStatus"] == status


async def test_output_and_working_directory(host: TerminalHost, repo: Path) -> None:
    output = await run(host, "sh", "-c", "pwd; echo two >&2")
    assert output == {
        "output": f"{repo.resolve()}\ntwo\n",
        "truncated": False,
        "exitStatus": {"exitCode": 0, "signal": None},
    }
    output = await run(host, "pwd", cwd=str(repo / "sub"))
    assert output["output"] == f"{(repo / 'sub').resolve()}\n"


async def test_command_without_args_is_a_shell_command_line(host: TerminalHost) -> None:
    output = await run(host, "echo one two | tr a-z A-Z")
    assert output["output"] == "ONE TWO\n"


@pytest.mark.parametrize(
    ("limit", "expected"), [(7, EURO * 2), (6, EURO * 2), (1, ""), (30, EURO * 10)]
)
async def test_output_byte_limit_truncates_from_the_beginning_at_a_character_boundary(
    host: TerminalHost, limit: int, expected: str
) -> None:
    output = await run(host, "printf", EURO * 10, outputByteLimit=limit)
    assert output["output"] == expected
    assert output["truncated"] is (limit < 30)


async def test_large_output_keeps_only_the_tail(host: TerminalHost) -> None:
    output = await run(host, "sh", "-c", "seq 1 200000", outputByteLimit=1000)
    assert output["truncated"] is True
    assert len(output["output"].encode()) <= 1000
    assert output["output"].endswith("199999\n200000\n")


async def test_kill_keeps_the_id(host: TerminalHost) -> None:
    created = await host.handle(
        "terminal/create", {"command": "sh", "args": ["-c", "echo started; exec sleep 1000"]}
    )
    ref = {"terminalId": created["terminalId"]}
    assert await first_line(host, ref["terminalId"]) == "started\n"
    assert "exitStatus" not in await host.handle("terminal/output", ref)
    assert await host.handle("terminal/kill", ref) == {}
    with anyio.fail_after(10):
        status = await host.handle("terminal/wait_for_exit", ref)
    assert status == {"exitCode": None, "signal": "SIGKILL"}
    output = await host.handle("terminal/output", ref)  # still valid after kill
    assert output["output"] == "started\n" and output["exitStatus"] == status
    await host.handle("terminal/release", ref)


async def test_release_kills_a_running_command_and_frees_the_id(host: TerminalHost) -> None:
    created = await host.handle("terminal/create", {"command": "sleep", "args": ["1000"]})
    ref = {"terminalId": created["terminalId"]}
    [pid] = host.pids()
    assert process_state(pid) not in (None, "Z")
    with anyio.fail_after(10):
        assert await host.handle("terminal/release", ref) == {}
    wait_gone([pid])
    assert host.open_count == 0
    for method in (
        "terminal/output",
        "terminal/wait_for_exit",
        "terminal/kill",
        "terminal/release",
    ):
        with pytest.raises(RpcError) as caught:
            await host.handle(method, ref)
        assert caught.value.code == RESOURCE_NOT_FOUND


async def test_close_kills_every_group_with_its_grandchildren(host: TerminalHost) -> None:
    ids = []
    for _ in range(2):
        created = await host.handle(
            "terminal/create", {"command": "sh", "args": ["-c", "sleep 1000 & echo $!; wait"]}
        )
        ids.append(created["terminalId"])
    grandchildren = [int(await first_line(host, i)) for i in ids]
    leaders = host.pids()
    assert all(process_state(p) not in (None, "Z") for p in grandchildren + leaders)
    with anyio.fail_after(10):
        await host.close()
    wait_gone(grandchildren + leaders)
    with pytest.raises(RpcError):
        await host.handle("terminal/create", {"command": "true"})


async def test_concurrent_terminals_are_capped(host: TerminalHost) -> None:
    ids = [
        (await host.handle("terminal/create", {"command": "sleep", "args": ["1000"]}))["terminalId"]
        for _ in range(4)
    ]
    with pytest.raises(RpcError) as caught:
        await host.handle("terminal/create", {"command": "true"})
    assert caught.value.code == TERMINAL_LIMIT_REACHED
    await host.handle("terminal/release", {"terminalId": ids[0]})
    created = await host.handle("terminal/create", {"command": "true"})
    assert created["terminalId"] not in ids


async def test_environment_is_the_base_plus_what_the_agent_asks(
    host: TerminalHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("API_TOKEN", "server-secret")
    env = [
        {"name": "EXTRA", "value": "1"},
        {"name": OWNER_ENV, "value": "forged"},
        {"name": SESSION_ENV, "value": "forged"},
    ]
    output = await run(host, "env", env=env)
    names = dict(line.split("=", 1) for line in output["output"].splitlines())
    assert names == {**BASE_ENV, "EXTRA": "1"}  # no API_TOKEN, owner marker not forged


@pytest.mark.parametrize(
    "params",
    [
        {"command": ""},
        {"command": 3},
        {"command": "sh", "args": "-c true"},
        {"command": "sh", "args": ["-c", 1]},
        {"command": "true", "env": {"A": "1"}},
        {"command": "true", "env": [{"name": "A=B", "value": "1"}]},
        {"command": "true", "env": [{"name": "A", "value": "x\x00y"}]},
        {"command": "true", "outputByteLimit": -1},
        {"command": "true", "outputByteLimit": True},
        {"command": "true", "cwd": 5},
        {"command": "/nonexistent/program"},
        {"command": "true", "cwd": "missing-dir"},
        {"command": "true", "cwd": "sub/../sub/nope"},
    ],
)
async def test_bad_create_params_are_refused(host: TerminalHost, params: dict[str, Any]) -> None:
    with pytest.raises(RpcError):
        await host.handle("terminal/create", params)
    assert host.open_count == 0


async def test_unknown_terminal_method(host: TerminalHost) -> None:
    with pytest.raises(RpcError) as caught:
        await host.handle("terminal/resize", {})
    assert caught.value.code == -32601


# -- working-directory confinement: the traversal catalogue ---------------------------------


@pytest.mark.parametrize(
    ("label", "template"), TRAVERSAL_PAYLOADS, ids=[p[0] for p in TRAVERSAL_PAYLOADS]
)
async def test_cwd_traversal_catalogue(
    tmp_path: Path, label: str, template: str, caplog: pytest.LogCaptureFixture
) -> None:
    tree = make_traversal_tree(tmp_path)
    root = Path(tree["root"])
    host = TerminalHost(Workspace(root, context={"session_id": "s-1"}), base_env=BASE_ENV)
    cwd = template.format(**tree)
    try:
        with caplog.at_level("WARNING", logger="agent_sessions.security"):
            try:
                output = await run(host, "pwd", cwd=cwd)
            except RpcError as exc:
                refused = exc
            else:
                refused = None
    finally:
        await host.close()
    if label in ESCAPES:
        assert refused is not None, f"{label}: ran in {output['output']!r}"
        records = [r for r in caplog.records if getattr(r, "event", None) == "path_refused"]
        assert any(r.path == cwd and r.session_id == "s-1" for r in records), records  # type: ignore[attr-defined]
    if refused is None:
        ran_in = Path(output["output"].rstrip("\n"))
        assert ran_in.parts[: len(root.parts)] == root.parts, (label, ran_in)


async def test_cwd_symlink_to_a_directory_outside_is_refused_even_if_it_appears_later(
    tmp_path: Path,
) -> None:
    tree = make_traversal_tree(tmp_path)
    root = Path(tree["root"])
    host = TerminalHost(Workspace(root), base_env=BASE_ENV)
    try:
        assert (await run(host, "pwd", cwd=str(root / "sub")))["output"] == f"{root / 'sub'}\n"
        os.rename(root / "sub", root / "sub-moved")
        os.symlink(Path(tree["outside"]) / "outside_dir", root / "sub")
        with pytest.raises(RpcError):
            await run(host, "pwd", cwd=str(root / "sub"))
    finally:
        await host.close()
