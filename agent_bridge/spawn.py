"""Starting agents and terminals without ``preexec_fn`` (unsafe once the server has
threads: aiosqlite and ``to_thread`` start some).

The child is started in its own session (``start_new_session``, done by the kernel's
``setsid`` in the spawn itself) through a tiny exec wrapper, a second interpreter run
with ``-I -S`` (it starts fast): ``agent_bridge/wrapper.py`` says what it does (the
parent-death signal, the agent's cgroup and its guard, the working directory, the exec).

PDEATHSIG fires when the *thread* that forked dies, not the process: spawn only from
the event loop's thread (asyncio's ``subprocess_exec`` forks there), never from a
worker thread, which anyio retires after a while.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["WRAPPER", "resolve_command", "wrapped"]

WRAPPER = str(Path(__file__).with_name("wrapper.py"))


def resolve_command(argv: Sequence[str], env: Mapping[str, str], cwd: str | int) -> str:
    """The program ``argv[0]`` names, looked up on the child's PATH or from its working
    directory ``cwd`` (a path or a directory descriptor); FileNotFoundError when there is
    none, so a missing command still fails at spawn, as without a wrapper."""
    program = argv[0]
    if os.sep in program:
        if isinstance(cwd, int):
            ok = os.access(program, os.X_OK, dir_fd=cwd)
            found = program
        else:
            found = os.path.join(cwd, program)
            ok = os.access(found, os.X_OK) and not os.path.isdir(found)
        if not ok:
            raise FileNotFoundError(2, "No such executable", program)
        return found
    found_on_path = shutil.which(program, path=env.get("PATH", os.defpath))
    if found_on_path is None:
        raise FileNotFoundError(2, "No such executable", program)
    return found_on_path


def wrapped(
    argv: Sequence[str],
    *,
    cwd_fd: int = -1,
    cgroup: str = "",
    own_cgroup: bool = True,
    guard: bool = False,
) -> list[str]:
    """The argv that runs ``argv`` through the wrapper, child of this process: in a new
    cgroup under ``cgroup`` (a directory; "" for none) or, without ``own_cgroup``, in
    the existing cgroup ``cgroup`` itself; watched by a guard if ``guard``."""
    flags = [str(os.getpid()), str(cwd_fd), cgroup, str(int(own_cgroup)), str(int(guard))]
    return [sys.executable, "-I", "-S", WRAPPER, *flags, *argv]
