"""Starting agents and terminals without ``preexec_fn`` (unsafe once the server has
threads: aiosqlite and ``to_thread`` start some).

The child is started in its own session (``start_new_session``, done by the kernel's
``setsid`` in the spawn itself) through a tiny exec wrapper, a second interpreter run
with ``-I -S`` (about 25 ms), which

1. asks for SIGKILL when its parent dies (``PR_SET_PDEATHSIG``; kept across
   ``execve``), then checks that the parent is still the server (it may have died
   before the request took effect);
2. changes into the directory it was handed as an open descriptor (terminals: the
   directory was resolved inside the workspace, no path is looked up again);
3. ``execvp``s the command. A command that cannot be run exits 127 with one line on
   stderr.

PDEATHSIG fires when the *thread* that forked dies, not the process: spawn only from
the event loop's thread (asyncio's ``subprocess_exec`` forks there), never from a
worker thread, which anyio retires after a while.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence

__all__ = ["WRAPPER", "resolve_command", "wrapped"]

WRAPPER = """\
import ctypes, os, sys
ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)
if os.getppid() != int(sys.argv[1]):
    os._exit(137)
fd = int(sys.argv[2])
if fd >= 0:
    os.fchdir(fd)
    os.close(fd)
try:
    os.execvp(sys.argv[3], sys.argv[3:])
except OSError as exc:
    sys.stderr.write(f"cannot run {sys.argv[3]!r}: {exc.strerror}\\n")
    os._exit(127)
"""


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


def wrapped(argv: Sequence[str], *, cwd_fd: int = -1) -> list[str]:
    """The argv that runs ``argv`` through the wrapper, child of this process."""
    return [sys.executable, "-I", "-S", "-c", WRAPPER, str(os.getpid()), str(cwd_fd), *argv]
