"""What changed between two trees (or commits): per-file status and line counts, and a
unified patch capped at a byte limit. Rename detection is on; binary files are marked
(``binary: true``, no counts) and never dumped into the patch."""

from pathlib import Path
from typing import TypedDict

from server.sessions.workspaces.git import run_git

__all__ = [
    "DIFF_OPTIONS",
    "Changes",
    "FileChange",
    "diff_trees",
    "parse_name_status",
    "parse_numstat",
]

DIFF_OPTIONS = ("diff", "--no-ext-diff", "--no-textconv", "--no-color", "-M", "--find-renames")
_STATUS = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "T": "modified"}


class FileChange(TypedDict):
    path: str
    oldPath: str | None
    status: str
    additions: int
    deletions: int
    binary: bool


class Changes(TypedDict):
    files: list[FileChange]
    patch: str
    truncated: bool


class SessionChanges(Changes):
    """``GET /api/sessions/{id}/changes``; ``scope``: a worktree's own changes
    (``session``) or the whole repository's working tree (``workspace``)."""

    baseCommit: str | None
    scope: str


class Committed(TypedDict):
    """``POST /api/sessions/{id}/commit``."""

    commit: str
    files: list[FileChange]


class Merged(TypedDict):
    """``POST /api/sessions/{id}/merge``."""

    commit: str | None  # MergeOutcome.commit: set whenever the merge went through
    into: str


def parse_name_status(raw: bytes) -> list[tuple[str, str, str | None]]:
    """``--name-status -z`` → [(status, path, old path)]."""
    parts = raw.decode("utf-8", "surrogateescape").split("\0")
    out: list[tuple[str, str, str | None]] = []
    i = 0
    while i < len(parts) and parts[i]:
        letter = parts[i][0]
        if letter in "RC":
            out.append((_STATUS.get(letter, "added"), parts[i + 2], parts[i + 1]))
            i += 3
        else:
            out.append((_STATUS.get(letter, "modified"), parts[i + 1], None))
            i += 2
    return out


def parse_numstat(raw: bytes) -> dict[str, tuple[int, int, bool]]:
    """``--numstat -z`` → {new path: (additions, deletions, binary)}."""
    parts = raw.decode("utf-8", "surrogateescape").split("\0")
    out: dict[str, tuple[int, int, bool]] = {}
    i = 0
    while i < len(parts) and parts[i]:
        added, deleted, path = parts[i].split("\t", 2)
        if path == "":  # a rename: the old and the new path follow
            path = parts[i + 2]
            i += 3
        else:
            i += 1
        binary = added == "-"
        out[path] = (0 if binary else int(added), 0 if binary else int(deleted), binary)
    return out


def _cap(patch: bytes, limit: int) -> tuple[str, bool]:
    if len(patch) <= limit:
        return patch.decode("utf-8", "replace"), False
    cut = patch.rfind(b"\n", 0, limit)
    return patch[: cut + 1 if cut >= 0 else limit].decode("utf-8", "replace"), True


def diff_trees(path: Path, old: str, new: str, max_bytes: int) -> Changes:
    statuses = parse_name_status(
        run_git(path, *DIFF_OPTIONS, "--name-status", "-z", old, new).stdout
    )
    counts = parse_numstat(run_git(path, *DIFF_OPTIONS, "--numstat", "-z", old, new).stdout)
    files: list[FileChange] = []
    for status, name, old_name in statuses:
        additions, deletions, binary = counts.get(name, (0, 0, False))
        files.append(
            FileChange(
                path=name,
                oldPath=old_name,
                status=status,
                additions=additions,
                deletions=deletions,
                binary=binary,
            )
        )
    patch, truncated = _cap(run_git(path, *DIFF_OPTIONS, old, new).stdout, max_bytes)
    return Changes(files=files, patch=patch, truncated=truncated)
