"""Reading a session's files for review (API.md, Review): a directory's entries and a
file's bytes, of the workspace as it is now (through ``agent_bridge.Workspace``, which
confines and logs every refusal) or of a commit (through git, with the path checked the
same way: relative, inside, no ``..``).

Synchronous: the caller runs these on a worker thread."""

import os
import stat
from pathlib import Path, PurePosixPath
from typing import Literal, TypedDict

import msgspec

from agent_bridge import Workspace
from agent_bridge.workspace import security_logger
from server.sessions.workspaces.checkpoints import resolve_commit
from server.sessions.workspaces.git import run_git

__all__ = [
    "Entry",
    "FileBytes",
    "NotInCommit",
    "OutsideCommit",
    "UnknownRef",
    "checked_relative",
    "commit_entries",
    "commit_file",
    "is_binary",
    "relative_path",
    "workspace_entries",
    "workspace_file",
]

HIDDEN = frozenset({".git"})
_SNIFF = 8000  # as git: a NUL in the first 8000 bytes makes a file binary


class Entry(TypedDict):
    name: str
    path: str
    type: Literal["file", "dir"]
    size: int | None


class FileBytes(msgspec.Struct, frozen=True):
    data: bytes
    size: int
    """The file's whole size (``data`` may be empty when it is over the limit)."""


class UnknownRef(Exception):
    """The ref names no commit of the repository."""


class OutsideCommit(Exception):
    """The path is absolute outside the workspace, or climbs out with ``..``."""


class NotInCommit(Exception):
    """Nothing at that path in the commit (or it is a directory where a file was asked)."""


def is_binary(data: bytes) -> bool:
    return b"\0" in data[:_SNIFF]


def relative_path(root: Path, path: str) -> str:
    """``path`` relative to the workspace (an absolute one must lie inside it, as a tool
    card's paths do); "" for the top. Only "/"-separated, never ``..``."""
    if "\x00" in path:
        raise OutsideCommit(path)
    pure = PurePosixPath(path)
    if pure.is_absolute():
        try:
            pure = pure.relative_to(PurePosixPath(root))
        except ValueError:
            raise OutsideCommit(path) from None
    parts = [part for part in pure.parts if part not in ("", ".")]
    if ".." in parts:
        raise OutsideCommit(path)
    return "/".join(parts)


def _sorted(entries: list[Entry]) -> list[Entry]:
    """Directories first, then files, each by name (as a code host lists them)."""
    return sorted(entries, key=lambda e: (e["type"] != "dir", e["name"].lower(), e["name"]))


def workspace_entries(workspace: Workspace, path: str) -> list[Entry]:
    """The entries of a workspace directory (``.git`` left out). A symlink is listed by
    what it points at when that is inside the workspace, and left out otherwise."""
    real = workspace.resolve(path or ".")
    root = workspace.root
    if not real.is_dir():
        raise NotADirectoryError(path)
    entries: list[Entry] = []
    with os.scandir(real) as listing:
        for item in listing:
            if item.name in HIDDEN and real == root:
                continue
            try:
                target = Path(os.path.realpath(item.path))
                if not target.is_relative_to(root):
                    continue
                st = os.stat(target)
            except OSError:
                continue
            kind: Literal["file", "dir"] = "dir" if stat.S_ISDIR(st.st_mode) else "file"
            relative = Path(item.path).relative_to(root).as_posix()
            entries.append(
                Entry(
                    name=item.name,
                    path=relative,
                    type=kind,
                    size=st.st_size if kind == "file" else None,
                )
            )
    return _sorted(entries)


def workspace_file(workspace: Workspace, path: str) -> FileBytes:
    data = workspace.read_bytes(path)
    return FileBytes(data, len(data))


def _commit(repo: Path, ref: str) -> str:
    commit = resolve_commit(repo, ref)
    if commit is None:
        raise UnknownRef(ref)
    return commit


def checked_relative(root: Path, path: str, session_id: str) -> str:
    """``relative_path``, logging a refusal as the workspace logs its own."""
    try:
        return relative_path(root, path)
    except OutsideCommit:
        security_logger.warning(
            "review refused path (outside)",
            extra={
                "event": "path_refused",
                "path": path,
                "reason": "outside",
                "session_id": session_id,
            },
        )
        raise


def commit_entries(repo: Path, root: Path, ref: str, path: str, session_id: str) -> list[Entry]:
    """The entries of a directory of a commit."""
    commit = _commit(repo, ref)
    relative = checked_relative(root, path, session_id)
    spec = f"{relative}/" if relative else "."
    kind = run_git(repo, "cat-file", "-t", f"{commit}:{relative}", check=False).text
    if kind != "tree":
        raise NotInCommit(path)
    listed = run_git(repo, "ls-tree", "-z", "-l", commit, "--", spec).stdout
    entries: list[Entry] = []
    for line in listed.decode("utf-8", "surrogateescape").split("\0"):
        if not line:
            continue
        meta, _, name_path = line.partition("\t")
        _mode, kind_word, _object, size = meta.split(maxsplit=3)
        if kind_word == "commit":
            continue  # a submodule: nothing of it is in this repository
        is_dir = kind_word == "tree"
        entries.append(
            Entry(
                name=PurePosixPath(name_path).name,
                path=name_path,
                type="dir" if is_dir else "file",
                size=None if is_dir else int(size.strip()),
            )
        )
    return _sorted(entries)


def commit_file(
    repo: Path, root: Path, ref: str, path: str, limit: int | None, session_id: str
) -> FileBytes:
    """A file of a commit; over ``limit`` only its size comes back (no bytes read)."""
    commit = _commit(repo, ref)
    relative = checked_relative(root, path, session_id)
    spec = f"{commit}:{relative}"
    if not relative or run_git(repo, "cat-file", "-t", spec, check=False).text != "blob":
        raise NotInCommit(path)
    size = int(run_git(repo, "cat-file", "-s", spec).text)
    if limit is not None and size > limit:
        return FileBytes(b"", size)
    return FileBytes(run_git(repo, "cat-file", "blob", spec).stdout, size)
