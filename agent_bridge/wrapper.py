"""The exec wrapper every agent and terminal is started through, and the guard it leaves
behind. Standard library only: it runs as ``python -I -S wrapper.py SERVER CWD_FD CGROUP
OWN GUARD COMMAND...`` (see ``agent_bridge.spawn``); the server imports its cgroup helpers.

The wrapper, a single-threaded interpreter that becomes the command:

1. asks for SIGKILL when its parent dies (``PR_SET_PDEATHSIG``; kept across
   ``execve``), then checks that the parent is still the server (it may have died
   before the request took effect);
2. with ``GUARD`` 1, double-forks the guard (below), so the guard is never a child of
   the command (a command that waits for any child never sees it): it is adopted by the
   server, a child subreaper, and stays in the command's session;
3. with a ``CGROUP`` directory and ``OWN`` 1 (an agent), creates ``CGROUP/<its pid>``
   and moves into it, so every descendant of the command, however it detaches
   (``setsid``, double fork), is in that cgroup; with ``OWN`` 0 (a terminal), moves into
   the existing cgroup ``CGROUP`` itself, its agent's, whose guard and stop then kill
   the command and all it starts; when that cgroup is gone (the agent ended, or never
   got in), the command runs without one, as with ``AGENT_CGROUPS=off``: a cgroup made
   again here would outlive its agent's guard;
4. changes into the directory it was handed as an open descriptor (terminals: the
   directory was resolved inside the workspace, no path is looked up again);
5. ``execvp``s the command. A command that cannot be run exits 127 with one line on
   stderr.

The guard holds a pidfd of the server and one of the command, nothing else (every other
descriptor is closed: it never holds the command's pipes open). When either process
ends it kills the command's process group and every process of its cgroup, removes the
cgroup (and, the server being dead, the server's own cgroup directory once empty), and
exits. So when the server is killed with ``kill -9``, the command dies of its
parent-death signal and everything it started goes with it, at once. On a normal stop
the server does the same itself and reaps the guard (``agent_bridge.process``).
"""

# Only what every spawn needs is imported here (each module costs the agent's start);
# the guard and the cgroup kill import theirs when they run.
import os
import sys

PR_SET_PDEATHSIG = 1
SIGKILL = 9
KILL_TIMEOUT = 5.0  # seconds a cgroup may take to empty after its processes are killed
POLL_SECONDS = 0.005
SERVER_DEATH_WAIT = 2.0


def _write(path: str, value: str) -> bool:
    try:
        with open(path, "w") as file:  # noqa: PTH123 - no pathlib: its import costs every spawn
            file.write(value)
    except OSError:
        return False
    return True


def _read(path: str) -> str | None:
    try:
        with open(path) as file:  # noqa: PTH123 - as above
            return file.read()
    except OSError:
        return None


def _kill(pid: int) -> None:
    try:
        os.kill(pid, SIGKILL)
    except OSError:
        pass


def cgroup_pids(path: str) -> list[int]:
    """The processes in the cgroup at ``path`` (none when it is gone)."""
    text = _read(os.path.join(path, "cgroup.procs")) or ""
    return [int(pid) for pid in text.split()]


def kill_cgroup(path: str, timeout: float = KILL_TIMEOUT) -> list[int]:  # noqa: ASYNC109 - not async
    """SIGKILL every process in the cgroup at ``path`` (cgroup v2: ``cgroup.kill``; v1
    freezer: frozen first, so nothing forks in between; v1 pids: until none is left) and
    wait, at most ``timeout`` seconds, until it is empty. Returns the pids seen."""
    import time  # noqa: PLC0415 - see the imports

    seen: list[int] = []
    if not os.path.isdir(path):
        return seen
    freezer = os.path.join(path, "freezer.state")
    frozen = os.path.exists(freezer) and _write(freezer, "FROZEN")
    if frozen:
        deadline = time.monotonic() + timeout
        while (_read(freezer) or "").strip() == "FREEZING" and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
    _write(os.path.join(path, "cgroup.kill"), "1")  # v2, Linux 5.14+; absent elsewhere
    deadline = time.monotonic() + timeout
    while True:
        pids = cgroup_pids(path)
        for pid in pids:
            if pid not in seen:
                seen.append(pid)
            _kill(pid)
        if frozen:  # a frozen process dies of its SIGKILL once thawed
            frozen = not _write(freezer, "THAWED")
        if not pids or time.monotonic() >= deadline:
            return seen
        time.sleep(POLL_SECONDS)


def remove_cgroup(path: str, timeout: float = KILL_TIMEOUT) -> bool:  # noqa: ASYNC109 - not async
    """Remove the (emptied) cgroup directory ``path``; the kernel may still count a dying
    process for a moment (EBUSY). True when it is gone."""
    import time  # noqa: PLC0415 - see the imports

    deadline = time.monotonic() + timeout
    while True:
        try:
            os.rmdir(path)
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() >= deadline or cgroup_pids(path):
                return False
            time.sleep(POLL_SECONDS)
        else:
            return True


def join(cgroup: str, pid: int) -> bool:
    """Make the cgroup ``cgroup`` and move ``pid`` into it. Both the server (while this
    interpreter starts) and the wrapper (before the exec, if it is not in yet) do it: a
    move into a cgroup waits for an RCU grace period, which that way mostly overlaps
    the start-up."""
    try:
        os.mkdir(cgroup)
    except FileExistsError:
        pass
    except OSError:
        return False
    return _write(os.path.join(cgroup, "cgroup.procs"), str(pid))


def _guard(server_fd: int, agent_fd: int, agent: int, cgroup: str) -> None:
    """Wait until the server or the agent ends, then kill everything of the agent."""
    os.setpgid(0, 0)  # out of the agent's group: its stop signals are not for us
    os.chdir("/")
    low, high = sorted((server_fd, agent_fd))
    os.closerange(0, low)  # never hold the agent's pipes (nor anything else) open
    os.closerange(low + 1, high)
    os.closerange(high + 1, os.sysconf("SC_OPEN_MAX"))
    if cgroup and os.getpid() in cgroup_pids(cgroup):  # forked after the server moved the
        # agent in: back to the server's own cgroup (<server's>/agent-sessions/<owner>/<pid>)
        server_cgroup = os.path.dirname(os.path.dirname(os.path.dirname(cgroup)))
        if not _write(os.path.join(server_cgroup, "cgroup.procs"), str(os.getpid())):
            cgroup = ""  # stuck in it: the server's stop empties it
    import select  # noqa: PLC0415 - see the imports
    import signal  # noqa: PLC0415 - see the imports

    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(signum, signal.SIG_IGN)
    poller = select.poll()
    poller.register(server_fd, select.POLLIN)
    poller.register(agent_fd, select.POLLIN)
    poller.poll()
    try:
        signal.pidfd_send_signal(agent_fd, SIGKILL)  # the server died: its PDEATHSIG may lag
    except OSError:
        pass
    poller.unregister(server_fd)
    poller.poll(int(KILL_TIMEOUT * 1000))  # the agent dead: nothing of it forks any more
    for step in ("group", "cgroup", "group"):
        if step == "group":
            try:
                os.killpg(agent, SIGKILL)
            except OSError:
                pass
        elif cgroup:
            kill_cgroup(cgroup)
            remove_cgroup(cgroup)
            # The server dead (its threads may take a moment; alive, it kills us at once),
            # its directory goes too.
            if select.select([server_fd], [], [], SERVER_DEATH_WAIT)[0]:
                owner = os.path.dirname(cgroup)
                for directory in (owner, os.path.dirname(owner)):
                    try:
                        os.rmdir(directory)  # when empty: the last guard's
                    except OSError:
                        break


def _start_guard(server: int, cgroup: str) -> None:
    """Double-fork the guard; the server adopts it once the middle process is reaped."""
    try:
        server_fd = os.pidfd_open(server)
    except OSError:  # pragma: no cover - Linux < 5.3: no guard
        return
    if os.getppid() != server:  # died between the check and the open: the pid may be reused
        os._exit(137)
    agent = os.getpid()
    agent_fd = os.pidfd_open(agent)
    middle = os.fork()
    if middle == 0:
        try:
            if os.fork() == 0:
                try:
                    _guard(server_fd, agent_fd, agent, cgroup)
                finally:
                    os._exit(0)
        finally:
            os._exit(0)
    os.waitpid(middle, 0)
    os.close(server_fd)
    os.close(agent_fd)


def main(argv: list[str]) -> None:
    import ctypes  # noqa: PLC0415 - see the imports

    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)
    server = int(argv[1])
    if os.getppid() != server:
        os._exit(137)
    cwd_fd, base, own, guard = int(argv[2]), argv[3], argv[4] == "1", argv[5] == "1"
    command = argv[6:]
    agent = os.getpid()
    cgroup = os.path.join(base, str(agent)) if base and own else base
    if guard:
        _start_guard(server, cgroup)
    if cgroup and not own:  # never made here (see 3.)
        _write(os.path.join(cgroup, "cgroup.procs"), str(agent))
    elif cgroup and agent not in cgroup_pids(cgroup):  # the server moves us too: see join
        join(cgroup, agent)
    if cwd_fd >= 0:
        os.fchdir(cwd_fd)
        os.close(cwd_fd)
    try:
        os.execvp(command[0], command)  # noqa: S606 - the command given, as the shell-less spawn did
    except OSError as exc:
        sys.stderr.write(f"cannot run {command[0]!r}: {exc.strerror}\n")
        os._exit(127)


if __name__ == "__main__":
    main(sys.argv)
