"""No process an agent started outlives its session, however it detaches (setsid and a
double fork), directly or through a terminal (ACP terminal/create), nor the server that
ran it (kill -9); and a node restarting on a host kills only what a dead process of its
own left (issue 17, items 5, 9 and 11)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from agent_bridge import kill_orphans, orphans, owner_marker
from agent_bridge.cgroups import KINDS, hierarchies
from agent_bridge.orphans import OWNER_ENV, SESSION_ENV
from server.app import create_app
from tests.fuzz.support import alive, answers, line, pid_from, raw_agent, write
from tests.helpers import create_session, live_agent_pid, processes_with_env, wait_for


def detaching_agent(folder: Path, pid_file: Path) -> str:
    """An agent whose first turn leaves a daemon behind (setsid + double fork) and ends."""
    return raw_agent(folder, [[{"detach": str(pid_file)}]])


# A terminal command that leaves a daemon behind (setsid + double fork; pid to argv[1]),
# then writes its own pid to argv[2] and runs on.
DETACHING_COMMAND = (
    "import os, sys, time\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        open(sys.argv[1], 'w').write(str(os.getpid()))\n"
    "        time.sleep(3600)\n"
    "    os._exit(0)\n"
    "os.wait()\n"
    "while not os.path.exists(sys.argv[1]) or not open(sys.argv[1]).read():\n"
    "    time.sleep(0.005)\n"
    "open(sys.argv[2], 'w').write(str(os.getpid()))\n"
    "time.sleep(3600)\n"
)


def terminal_steps(folder: Path) -> list[dict[str, Any]]:
    """Steps of the raw agent in ``folder``: run DETACHING_COMMAND in a terminal
    (``terminal/create``, id "term"; pid files in ``folder``), and wait for the answer."""
    args = ["-c", DETACHING_COMMAND, str(folder / "term-daemon.pid"), str(folder / "term.pid")]
    params = {"sessionId": "raw", "command": sys.executable, "args": args}
    return [
        write(line({"id": "term", "method": "terminal/create", "params": params})),
        {"await": ["term"]},
    ]


def terminal_pids(folder: Path) -> tuple[int, int]:
    """(terminal command, its detached daemon) of the raw agent in ``folder``, once the
    terminal was created and its command has written both."""
    created = [a.get("result", a) for a in answers(folder) if a.get("id") == "term"]
    assert created == [{"terminalId": "term_1"}]
    wait_for(lambda: (folder / "term.pid").exists() and (folder / "term.pid").read_text())
    return pid_from(folder / "term.pid"), pid_from(folder / "term-daemon.pid")


@pytest.mark.parametrize("cgroups", ["auto", "off"])
def test_detached_descendants_die_with_their_session(
    make_settings, tmp_path: Path, cgroups: str
) -> None:
    keep_pid, end_pid = tmp_path / "keep.pid", tmp_path / "end.pid"
    keep_cmd = detaching_agent(tmp_path / "keep", keep_pid)
    end_cmd = detaching_agent(tmp_path / "end", end_pid)
    agents = tmp_path / "agents.toml"
    agents.write_text(
        f"[agents.keep]\ncommand = {keep_cmd!r}\n\n[agents.end]\ncommand = {end_cmd!r}\n"
    )
    settings = make_settings(AGENTS_FILE=agents, AGENT_CGROUPS=cgroups)
    with TestClient(create_app(settings)) as client:
        repo = client.get("/api/repos").json()["repos"][0]["id"]
        keep = create_session(client, repo, agentId="keep")["id"]
        end = create_session(client, repo, agentId="end")["id"]
        for sid in (keep, end):
            run = client.post(f"/api/sessions/{sid}/prompt", json={"text": "go"}).json()["runId"]
            wait_for(
                lambda run=run: client.get(f"/api/agent-runs/{run}").json()["status"] != "running"
            )
        daemons = {sid: pid_from(path) for sid, path in ((keep, keep_pid), (end, end_pid))}
        assert all(alive(pid) for pid in daemons.values())
        assert os.getsid(daemons[end]) != os.getsid(live_agent_pid(client, end))  # detached
        sessions = client.app.state.agent_sessions.sessions
        sweep = sessions.supervisor.orphans.sweep
        assert client.portal.call(sweep, lambda: set(sessions.registry)) == []  # both live: kept
        assert client.post(f"/api/sessions/{end}/complete").status_code == 200
        assert not alive(daemons[end])  # gone when its session ended, not later
        assert alive(daemons[keep])  # another session's, still live
        assert processes_with_env(f"{SESSION_ENV}={end}\0") == []  # its guard too
        base = sessions.services.cgroups.base
        assert (base is None) is (cgroups == "off" or not any(map(usable, KINDS)))
        if base is not None:  # the ended agent's cgroup is removed, the live one's kept
            assert [p.name for p in base.iterdir() if p.is_dir()] == [
                str(live_agent_pid(client, keep))
            ]
        client.delete(f"/api/sessions/{keep}")
        assert not alive(daemons[keep])
    assert base is None or not base.exists()  # and this server's directory at shutdown


@pytest.mark.parametrize("cgroups", ["auto", "off"])
def test_a_terminals_detached_descendants_die_with_the_session(
    make_settings, tmp_path: Path, cgroups: str
) -> None:
    """The agent's terminal command detaches a daemon (setsid + double fork) and runs on:
    with a cgroup both are in the agent's, and both are gone once the session ends."""
    folder = tmp_path / "agent"
    command = raw_agent(folder, [terminal_steps(folder)])
    settings = make_settings(AGENT_COMMAND=command, AGENT_CGROUPS=cgroups)
    with TestClient(create_app(settings)) as client:
        repo = client.get("/api/repos").json()["repos"][0]["id"]
        sid = create_session(client, repo)["id"]
        run = client.post(f"/api/sessions/{sid}/prompt", json={"text": "go"}).json()["runId"]
        wait_for(lambda: client.get(f"/api/agent-runs/{run}").json()["status"] != "running")
        terminal, daemon = terminal_pids(folder)
        agent = live_agent_pid(client, sid)
        assert os.getsid(daemon) not in (agent, terminal) and alive(terminal) and alive(daemon)
        base = client.app.state.agent_sessions.sessions.services.cgroups.base
        if base is not None:
            procs = (base / str(agent) / "cgroup.procs").read_text().split()
            assert {str(agent), str(terminal), str(daemon)} <= set(procs)
        assert client.post(f"/api/sessions/{sid}/complete").status_code == 200
        assert not alive(terminal) and not alive(daemon)  # when it ended, not later
        assert processes_with_env(f"{SESSION_ENV}={sid}\0") == []


def usable(kind: str) -> bool:
    """Whether this machine lets a server make cgroups of ``kind`` ("off": always)."""
    path = hierarchies().get(kind)
    return kind == "off" or (path is not None and os.access(path, os.W_OK))


def server_cgroups(kind: str, server_pid: int) -> list[Path]:
    top = hierarchies()[kind] / "agent-sessions"
    return [p for p in top.iterdir() if f"-{server_pid}-" in p.name] if top.is_dir() else []


@pytest.mark.parametrize("kind", ["v2", "freezer", "pids", "off"])
def test_descendants_go_when_the_server_is_killed(live_server, tmp_path: Path, kind: str) -> None:
    """kill -9 of the server: the agent and its terminal's command die at once
    (parent-death signal set by the exec wrapper), and the agent's guard kills what they
    started: a child in the agent's process group and, in the agent's cgroup (which the
    terminal's command joined), one each detached with setsid and a double fork. Without
    a cgroup (AGENT_CGROUPS=off) the detached ones are left to the next start's sweep."""
    if not usable(kind):
        pytest.skip(f"no writable {kind} cgroup hierarchy here")
    child_file, daemon_file = tmp_path / "child.pid", tmp_path / "daemon.pid"
    steps = [{"child": str(child_file)}, {"detach": str(daemon_file)}]
    command = raw_agent(tmp_path / "agent", [steps + terminal_steps(tmp_path / "agent")])
    server = live_server(AGENT_COMMAND=command, AGENT_CGROUPS=kind)
    with httpx.Client(base_url=server.url, timeout=30) as http:
        repo = http.get("/api/repos").json()["repos"][0]["id"]
        sid = http.post("/api/sessions", json={"repoId": repo}).json()["id"]
        run = http.post(f"/api/sessions/{sid}/prompt", json={"text": "go"}).json()["runId"]
        wait_for(lambda: http.get(f"/api/agent-runs/{run}").json()["status"] != "running")
    terminal, terminal_daemon = terminal_pids(tmp_path / "agent")
    # agent, guard, child, daemon, terminal, terminal_daemon
    ours = processes_with_env(f":{server.process.pid}:")
    child, daemon = pid_from(child_file), pid_from(daemon_file)
    assert {child, daemon, terminal, terminal_daemon} <= set(ours) and len(ours) == 6
    assert all(alive(p) for p in ours)
    agent = next(p for p in ours if os.getsid(p) == p and p != terminal)
    assert os.getpgid(child) == agent and os.getsid(daemon) != agent  # detached
    assert os.getsid(terminal_daemon) not in (agent, terminal)  # detached from the terminal
    if kind != "off":
        (owner,) = server_cgroups(kind, server.process.pid)  # made at start
        in_cgroup = {int(p) for p in (owner / str(agent) / "cgroup.procs").read_text().split()}
        assert {agent, child, daemon, terminal, terminal_daemon} <= in_cgroup
    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait(10)
    if kind == "off":
        wait_for(lambda: not any(alive(p) for p in ours if p not in (daemon, terminal_daemon)))
        assert alive(daemon) and alive(terminal_daemon)  # the fallback: the next start's sweep
        live_server(AGENT_COMMAND=command, AGENT_CGROUPS=kind)
        assert not alive(daemon) and not alive(terminal_daemon)
        return
    wait_for(lambda: not any(alive(p) for p in ours))  # with the server, no restart
    wait_for(lambda: server_cgroups(kind, server.process.pid) == [])  # nothing left behind


def test_restarting_node_leaves_other_nodes_agents(live_server, tmp_path: Path) -> None:
    """Two nodes on one host and one database: a node that (re)starts kills none of the
    other node's live agents or their descendants."""
    pid_file = tmp_path / "daemon.pid"
    command = detaching_agent(tmp_path / "agent", pid_file)
    first = live_server(AGENT_COMMAND=command, NODE_ID="node-a")
    with httpx.Client(base_url=first.url, timeout=30) as http:
        repo = http.get("/api/repos").json()["repos"][0]["id"]
        sid = http.post("/api/sessions", json={"repoId": repo}).json()["id"]
        run = http.post(f"/api/sessions/{sid}/prompt", json={"text": "go"}).json()["runId"]
        wait_for(lambda: http.get(f"/api/agent-runs/{run}").json()["status"] != "running")
    agents = processes_with_env(f":node-a:{first.process.pid}:")
    assert agents and alive(pid_from(pid_file))
    second = live_server(AGENT_COMMAND=command, NODE_ID="node-b")
    assert second.process.poll() is None
    assert all(alive(p) for p in agents)
    assert alive(pid_from(pid_file))


def marked(owner: str) -> subprocess.Popen[bytes]:
    """A process carrying an owner marker, as an agent (or its descendant) does."""
    env = {**os.environ, OWNER_ENV: owner, SESSION_ENV: "s"}
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], env=env)


@pytest.mark.parametrize(
    ("whose", "killed"),
    [
        ("this node, dead server", True),
        ("this node, pid reused by another process", True),
        ("this node, live server", False),
        ("other node, dead server", False),
        ("other database, dead server", False),
        ("this server", False),
    ],
)
def test_start_sweep_kills_only_what_a_dead_process_of_its_own_node_left(
    whose: str, killed: bool
) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        # databases of this test process's own: a test worker running beside it
        # (pytest-xdist) kills what dead servers of *its* databases left, never these
        db, db2 = f"db-{os.getpid()}", f"db2-{os.getpid()}"
        me = owner_marker(db, "node:1")  # a node id may hold the separator
        owner = {
            "this node, dead server": owner_marker(db, "node:1", dead.pid),
            "this node, pid reused by another process": f"{db}:node:1:{live.pid}:1",
            "this node, live server": owner_marker(db, "node:1", live.pid),
            "other node, dead server": owner_marker(db, "node:2", dead.pid),
            "other database, dead server": owner_marker(db2, "node:1", dead.pid),
            "this server": me,
        }[whose]
        process = marked(owner)
        try:
            wait_for(
                lambda: OWNER_ENV.encode() in Path(f"/proc/{process.pid}/environ").read_bytes()
            )
            found = kill_orphans(me)
            assert (process.pid in found) is killed
            process.wait(10) if killed else None
            assert (process.poll() is not None) is killed
        finally:
            process.kill()
            process.wait()
    finally:
        live.kill()
        live.wait()


def test_a_sweep_spares_an_agent_whose_session_went_live_while_it_ran(monkeypatch) -> None:
    """A session is live before its agent is forked, but a sweep (one at every session's
    end, and every few seconds) may have been asked for before that: it must take the live
    sessions once it has read /proc, or it kills the starting agent (a 502 "exited during
    initialize with code -9" seen under load)."""
    me = owner_marker("db", "node:1")
    process = marked(me)  # our child, of session "s", not (yet) tracked
    try:
        wait_for(lambda: OWNER_ENV.encode() in Path(f"/proc/{process.pid}/environ").read_bytes())
        live: set[str] = set()
        real_pids = orphans._pids

        def session_starts_meanwhile() -> list[int]:
            live.add("s")  # the sweep was asked for before this session was live
            return real_pids()

        monkeypatch.setattr(orphans, "_pids", session_starts_meanwhile)
        sweeper = orphans.OrphanSweeper(me, frozenset)
        assert sweeper.sweep_once(lambda: set(live)) == []
        assert process.poll() is None
        live.clear()  # the session ended: now its process is an orphan
        monkeypatch.setattr(orphans, "_pids", real_pids)
        assert sweeper.sweep_once(lambda: set(live)) == [process.pid]
        assert process.wait(10) == -signal.SIGKILL
    finally:
        process.kill()
        process.wait()
