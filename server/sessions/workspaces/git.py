"""Every git call of the server goes through ``run_git``: an argument list (never a
shell), a timeout, a clean environment, and guards so that a repository's own
configuration runs no code of its own (hooks, fsmonitor, clean/smudge filters, external
diff and textconv, custom merge drivers, automatic gc).

The minimum git is 2.38 (``git merge-tree --write-tree``). ``GitMissing`` and
``GitTooOld`` say so in one sentence; ``GitFailed`` carries the exit code and stderr.

Synchronous on purpose: callers on the event loop wrap whole operations in
``anyio.to_thread.run_sync`` (see ``server.sessions.workspaces.service``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

import msgspec

__all__ = [
    "MIN_VERSION",
    "GitError",
    "GitFailed",
    "GitMissing",
    "GitResult",
    "GitTooOld",
    "git_version",
    "run_git",
]

MIN_VERSION = (2, 38)
TIMEOUT = 60.0

# Applied to every call: none of these can be overridden by the repository.
GUARDS = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
    "-c",
    "core.quotePath=false",
    "-c",
    "commit.gpgSign=false",
    "-c",
    "protocol.allow=never",
)
# Inherited variables that would point git elsewhere or change its behaviour.
_DROPPED_ENV = re.compile(r"^(GIT_|LANGUAGE$|LC_)")


class GitError(Exception):
    """A git problem, with a sentence for people."""


class GitMissing(GitError):
    pass


class GitTooOld(GitError):
    pass


class GitFailed(GitError):
    def __init__(self, args: Sequence[str], code: int, stderr: str) -> None:
        self.args_ = list(args)
        self.code = code
        self.stderr = stderr
        first = stderr.strip().splitlines()[-1:] or [""]
        super().__init__(f"git {args[0] if args else ''} failed ({code}): {first[0]}")


class GitResult(msgspec.Struct, frozen=True):
    code: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace").strip()


def _base_env(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not _DROPPED_ENV.match(k)}
    env.update(
        LC_ALL="C",
        GIT_TERMINAL_PROMPT="0",
        GIT_OPTIONAL_LOCKS="0",  # status/diff never take the user's index.lock
        GIT_CONFIG_NOSYSTEM="1",
        GIT_ATTR_NOSYSTEM="1",
        GIT_EDITOR="true",
        GIT_PAGER="cat",
        GIT_ASKPASS="",
        SSH_ASKPASS="",
    )
    if extra:
        env.update(extra)
    return env


def _executable() -> str:
    path = shutil.which("git")
    if path is None:
        raise GitMissing(
            "git is not installed or not on PATH; install git 2.38 or newer "
            "(e.g. apt-get install git) to use worktrees, checkpoints and changes."
        )
    return path


@lru_cache(maxsize=1)
def git_version() -> tuple[int, int]:
    """The installed git's (major, minor); raises GitMissing / GitTooOld."""
    exe = _executable()
    out = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        [exe, "--version"], capture_output=True, timeout=10, check=False, env=_base_env(None)
    ).stdout.decode(errors="replace")
    match = re.search(r"(\d+)\.(\d+)", out)
    version = (int(match.group(1)), int(match.group(2))) if match else (0, 0)
    if version < MIN_VERSION:
        raise GitTooOld(
            f"git {version[0]}.{version[1]} is too old: worktrees and merges need git "
            f"{MIN_VERSION[0]}.{MIN_VERSION[1]} or newer."
        )
    return version


def _neutralising(cwd: Path, env: Mapping[str, str]) -> list[str]:
    """``-c`` options that switch off the filter and merge drivers the repository's own
    configuration names: an empty clean/smudge/process command is skipped by git, and a
    custom merge driver becomes ``false`` (its files count as conflicts, nothing runs)."""
    listed = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        [_executable(), *GUARDS, "config", "--name-only", "--get-regexp", r"^(filter|merge)\."],
        cwd=cwd,
        capture_output=True,
        timeout=10,
        check=False,
        env=dict(env),
    )
    options: list[str] = []
    for key in listed.stdout.decode(errors="replace").split():
        section, _, rest = key.partition(".")
        name, _, leaf = rest.rpartition(".")
        if not name:
            continue
        if section == "filter" and leaf in ("clean", "smudge", "process"):
            options += ["-c", f"filter.{name}.{leaf}=", "-c", f"filter.{name}.required=false"]
        elif section == "merge" and leaf == "driver":
            options += ["-c", f"merge.{name}.driver=false"]
    return options


def run_git(
    cwd: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    ok_codes: Sequence[int] = (0,),
    timeout: float = TIMEOUT,
    input_bytes: bytes | None = None,
) -> GitResult:
    """``git <guards> <args>`` in ``cwd``; raises GitFailed unless the exit code is in
    ``ok_codes`` (when ``check``)."""
    git_version()
    full_env = _base_env(env)
    # Every command: even write-tree may hash a racily-clean file through a filter.
    argv = [_executable(), *GUARDS, *_neutralising(cwd, full_env), *args]
    try:
        done = subprocess.run(  # noqa: S603 - an argument list, never a shell
            argv,
            cwd=cwd,
            capture_output=True,
            timeout=timeout,
            check=False,
            env=full_env,
            input=input_bytes,
        )
    except subprocess.TimeoutExpired:
        raise GitFailed(args, -1, f"timed out after {timeout:g} s") from None
    except FileNotFoundError as exc:
        raise GitFailed(args, -1, f"cannot run in {cwd}: {exc.strerror}") from None
    result = GitResult(done.returncode, done.stdout, done.stderr.decode("utf-8", "replace"))
    if check and result.code not in ok_codes:
        raise GitFailed(args, result.code, result.stderr)
    return result
