"""The start-up sweep of agent cgroups a dead server left (its guard normally removes
them; not when it was killed too): a node kills and removes only its own, and removes
only the empty ones of other nodes (issue 17, item 9); the guard alone empties an
agent's cgroup; a terminal's command runs in its agent's cgroup, never in a new one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_bridge import TerminalHost, Workspace, owner_marker
from agent_bridge.cgroups import KINDS, TOP, AgentCgroups, _owner_key, hierarchies
from agent_bridge.orphans import process_start_time
from agent_bridge.spawn import wrapped
from agent_bridge.wrapper import kill_cgroup, remove_cgroup
from tests.fuzz.support import alive
from tests.helpers import wait_for


def sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])


@pytest.fixture
def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    parent = hierarchies().get(request.param)
    if parent is None or not os.access(parent, os.W_OK):
        pytest.skip(f"no writable {request.param} cgroup hierarchy here")
    return str(request.param)


def scratch_directory(kind: str, label: str) -> Path:
    """A directory of this test process's under the shared top: named like a live
    server's (``<key>-<pid>-<start time>``), so that no server starting meanwhile on this
    machine (other test runs) sweeps it away while it is empty."""
    name = f"{label}-{os.getpid()}-{process_start_time(os.getpid())}"
    return hierarchies()[kind] / TOP / name


def agent_cgroup(
    top: Path, owner: str, with_process: bool
) -> tuple[Path, subprocess.Popen[bytes] | None]:
    """An agent cgroup of ``owner``'s, with a live process in it or empty."""
    cgroup = top / _owner_key(owner)[1] / "12345"
    cgroup.mkdir(parents=True)
    if not with_process:
        return cgroup, None
    process = sleeper()
    (cgroup / "cgroup.procs").write_text(str(process.pid))
    return cgroup, process


def test_start_sweeps_what_a_dead_server_left(kind: str, dead_pid: int) -> None:
    top = hierarchies()[kind] / TOP
    # databases of this test process's own: a test worker running beside it (pytest-xdist)
    # sweeps the same hierarchies, and must see these as another node's
    db, db2 = f"db-{os.getpid()}", f"db2-{os.getpid()}"
    made: list[subprocess.Popen[bytes]] = []
    try:
        own, own_process = agent_cgroup(top, owner_marker(db, "node:1", dead_pid), True)
        other, other_process = agent_cgroup(top, owner_marker(db, "node:2", dead_pid), True)
        empty, _ = agent_cgroup(top, owner_marker(db2, "node:1", dead_pid), False)
        live, live_process = agent_cgroup(top, owner_marker(db, "node:1", os.getpid()), True)
        made += [p for p in (own_process, other_process, live_process) if p is not None]
        assert own_process is not None and other_process is not None and live_process
        cgroups = AgentCgroups(owner_marker(db, "node:1"), kind)  # a later server of node:1
        assert cgroups.sweep_stale() == [own.parent]
        own_process.wait(10)  # killed
        assert not own.parent.exists()
        assert alive(other_process.pid) and other.exists()  # another node's: not killed
        assert not empty.parent.exists()  # but an empty one of a dead server is removed
        assert alive(live_process.pid) and live.exists()  # a live server's: kept
    finally:
        for process in made:
            process.kill()
            process.wait()
        for cgroup in sorted(top.glob("*/*"), reverse=True) + sorted(top.glob("*")):
            name = cgroup.relative_to(top).parts[0]
            if cgroup.is_dir() and (f"-{dead_pid}-" in name or f"-{os.getpid()}-" in name):
                remove_cgroup(str(cgroup))


def test_the_guard_empties_and_removes_the_cgroup_when_the_agent_ends(
    kind: str, tmp_path: Path
) -> None:
    """No stop path runs here: the agent ends on its own, and its guard alone kills the
    daemon it detached into its cgroup, and removes that cgroup."""
    base = scratch_directory(kind, "guardtest")
    base.mkdir(parents=True)
    pid_file = tmp_path / "daemon.pid"
    agent = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        open(sys.argv[1], 'w').write(str(os.getpid()))\n"
        "        time.sleep(600)\n"
        "    os._exit(0)\n"
        "os.wait()\n"
        "while not os.path.exists(sys.argv[1]) or not open(sys.argv[1]).read():\n"
        "    time.sleep(0.005)\n"
    )
    argv = wrapped([sys.executable, "-c", agent, str(pid_file)], cgroup=str(base), guard=True)
    try:
        process = subprocess.Popen(argv, start_new_session=True)
        assert process.wait(30) == 0
        daemon = int(pid_file.read_text())
        wait_for(lambda: not alive(daemon) and not (base / str(process.pid)).exists())
    finally:  # a failure leaves nothing behind either
        for cgroup in [p for p in base.iterdir() if p.is_dir()]:
            kill_cgroup(str(cgroup))
            remove_cgroup(str(cgroup))
        remove_cgroup(str(base))
    assert not base.exists()


@pytest.mark.anyio
async def test_a_terminal_runs_in_its_agents_cgroup_and_never_makes_one(
    kind: str, tmp_path: Path
) -> None:
    """The command of a terminal joins its agent's cgroup (so the agent's guard and stop
    kill all it starts); once that cgroup is gone (the agent ended) the command runs
    without one, as with AGENT_CGROUPS=off, and the cgroup is not made again (nothing
    would remove it)."""
    cgroup = scratch_directory(kind, "terminaltest")
    cgroup.mkdir(parents=True)
    host = TerminalHost(Workspace(tmp_path), base_env={"PATH": os.environ["PATH"]})
    host.cgroup = cgroup

    async def run() -> dict[str, object]:
        created = await host.handle("terminal/create", {"command": "cat /proc/self/cgroup"})
        await host.handle("terminal/wait_for_exit", created)
        output: dict[str, object] = await host.handle("terminal/output", created)
        await host.handle("terminal/release", created)
        return output

    try:
        joined = await run()
        assert joined["exitStatus"] == {"exitCode": 0, "signal": None}
        assert f"/{TOP}/{cgroup.name}\n" in str(joined["output"])
        assert remove_cgroup(str(cgroup))
        outside = await run()
        assert outside["exitStatus"] == {"exitCode": 0, "signal": None}
        assert f"/{TOP}/" not in str(outside["output"])
        assert not cgroup.exists()
    finally:
        await host.close()
        remove_cgroup(str(cgroup))


@pytest.mark.anyio
async def test_an_agent_start_waits_for_the_cgroups_made_off_the_start_up_path(kind: str) -> None:
    """The server makes its cgroups on a worker thread once its rows are recovered (the
    kernel's first join costs ~20 ms, past readiness): an agent started meanwhile waits for
    them, never starting outside a cgroup."""
    import anyio

    cgroups = AgentCgroups(owner_marker(f"db-{os.getpid()}", "node:wait"), kind)
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(cgroups.run_start)
            assert cgroups.base is None  # still being made on its thread
            base = await cgroups.ready()
        assert base is not None and base == cgroups.base and base.is_dir()
    finally:
        cgroups.release()


def test_a_process_joins_with_the_interpreter_where_there_is_no_shell(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_bridge import cgroups as module

    joins = [["/nonexistent/sh", "-c", "exit 0"], *module._JOINS[1:]]
    monkeypatch.setattr(module, "_JOINS", joins)
    cgroups = AgentCgroups(owner_marker(f"db-{os.getpid()}", "node:noshell"), kind)
    try:
        assert cgroups.prepare() is not None
    finally:
        cgroups.release()
