"""API.md "Review": reading the workspace (or a commit) file by file, reverting a file or
some hunks of it back to ``baseCommit``, and sending line comments to the agent as one
prompt (``Workspace.merged`` is ``merged``'s).

Every path a client names goes through the session's ``Workspace`` (the workspace now) or
``tree.relative_path`` (a commit): outside is 403 ``path_outside_workspace``, logged."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Literal

import msgspec

from agent_bridge import Workspace
from agent_bridge.workspace import FileNotFound, FileRefused, PathOutsideWorkspace
from server.contents import ReviewComment, ReviewContent, TextContent, as_json
from server.sessions.errors import Conflict, Forbidden, Invalid, NotFound, TooLarge, TurnInProgress
from server.sessions.records import get_record
from server.sessions.services import Services
from server.sessions.workspaces import checkpoints, tree
from server.sessions.workspaces.changes import DIFF_OPTIONS, SessionChanges
from server.sessions.workspaces.git import run_git
from server.sessions.workspaces.hunks import HunkMismatch, parse_hunks, unapply
from server.sessions.workspaces.operations import changes
from server.sessions.workspaces.review_log import record_review
from server.sessions.workspaces.service import in_thread, session_lock, session_root
from store import SessionRecord
from store import repos as repo_store

__all__ = [
    "FileRead",
    "LineComment",
    "TurnRunning",
    "list_tree",
    "read_file",
    "review_prompt",
    "revert",
]

log = logging.getLogger("agent_sessions.review")

RAW_LIMIT = 10 * 1024 * 1024  # ``raw=true``: the largest file served at all

Side = Literal["new", "old"]

TurnRunning = Callable[[str], bool]
"""Whether a session has a turn running on this node (the registry's answer, passed in
so that this module never sees the registry)."""


class LineComment(msgspec.Struct):
    """One line comment of a review request (already checked for shape); ``path`` becomes
    relative to the workspace once confined."""

    path: str
    line: int
    side: Side
    body: str


class FileRead(msgspec.Struct, frozen=True):
    """What ``GET …/file`` answers: the bytes and whether they are text."""

    data: bytes
    binary: bool


async def _context(services: Services, session_id: str) -> tuple[SessionRecord, Path, Path]:
    """(record, repository, workspace root) of a session."""
    record = await get_record(services.db, session_id)
    async with services.db.read() as db:
        repo = await repo_store.get_repo(db, record.repo_id)
    if repo is None:
        raise NotFound("repo", record.repo_id)
    repo_path = Path(repo.path)
    return record, repo_path, session_root(services.settings, record, repo_path)


@contextmanager
def _confined(path: str) -> Iterator[None]:
    """Workspace and commit refusals as the API's errors."""
    try:
        yield
    except (PathOutsideWorkspace, tree.OutsideCommit):
        raise Forbidden(
            "path_outside_workspace", "The path is outside the session's workspace."
        ) from None
    except (FileNotFound, tree.NotInCommit, FileNotFoundError):
        raise NotFound("file", path, f"Nothing at {path!r}.", {"path": path}) from None
    except NotADirectoryError:
        raise NotFound("directory", path, f"No directory at {path!r}.", {"path": path}) from None
    except tree.UnknownRef as exc:
        raise NotFound("ref", str(exc), f"No commit {exc} in the repository.") from None


def _workspace(root: Path, session_id: str, limit: int = RAW_LIMIT) -> Workspace:
    return Workspace(root, max_file_bytes=limit, context={"session_id": session_id})


def _in_repo(record: SessionRecord, ref: str) -> str:
    """Refs are resolved in the repository, where ``HEAD`` is its own checkout: for a
    worktree session ``HEAD`` means the session's branch (what its worktree has out)."""
    if ref == "HEAD" and record.isolation == "worktree" and record.branch:
        return f"refs/heads/{record.branch}"
    return ref


async def list_tree(
    services: Services, session_id: str, path: str, ref: str | None
) -> list[tree.Entry]:
    record, repo, root = await _context(services, session_id)
    with _confined(path):
        if ref is None:
            return await in_thread(tree.workspace_entries, _workspace(root, record.id), path)
        found = _in_repo(record, ref)
        return await in_thread(tree.commit_entries, repo, root, found, path, record.id)


def _read_workspace(root: Path, session_id: str, path: str, limit: int) -> tree.FileBytes:
    workspace = _workspace(root, session_id, limit)
    try:
        return tree.workspace_file(workspace, path)
    except FileRefused as exc:
        if exc.reason != "too_large":
            raise
        return tree.FileBytes(b"", limit + 1)
    except IsADirectoryError:
        raise NotADirectoryError(path) from None


async def read_file(
    services: Services, session_id: str, path: str, ref: str | None, raw: bool
) -> FileRead:
    """A file's bytes; 413 over ``MAX_EMBED_BYTES`` unless ``raw``."""
    if not path:
        raise Invalid("path names a file of the workspace.", field="path")
    record, repo, root = await _context(services, session_id)
    limit = RAW_LIMIT if raw else services.settings.max_embed_bytes
    with _confined(path):
        try:
            if ref is None:
                found = await in_thread(_read_workspace, root, record.id, path, limit)
            else:
                commit = _in_repo(record, ref)
                found = await in_thread(
                    tree.commit_file, repo, root, commit, path, limit, record.id
                )
        except FileRefused as exc:  # a directory, a device, a name too long…
            raise NotFound(
                "file", path, f"No readable file at {path!r} ({exc.reason}).", {"path": path}
            ) from None
    if found.size > limit:
        raise TooLarge("file", limit)
    return FileRead(found.data, tree.is_binary(found.data))


# -- revert ------------------------------------------------------------------------------


def _file_patch(workspace: Path, key: str, base: str, path: str, old_path: str | None) -> bytes:
    """The file's part of the changes patch: the same diff options, one path."""
    now = checkpoints.snapshot(workspace, key)
    paths = [path] if old_path is None else [old_path, path]
    return run_git(workspace, *DIFF_OPTIONS, base, now, "--", *paths).stdout


def _base_blob(workspace: Path, base: str, path: str) -> bytes | None:
    spec = f"{base}:{path}"
    if run_git(workspace, "cat-file", "-t", spec, check=False).text != "blob":
        return None
    return run_git(workspace, "cat-file", "blob", spec).stdout


def _remove(workspace: Workspace, path: str) -> None:
    """Remove the file at ``path`` itself: a symlink goes, never what it points at (the
    parent is resolved and confined, the last name is not followed)."""
    pure = PurePosixPath(path)
    parent = workspace.resolve(str(pure.parent) if str(pure.parent) != "." else ".")
    target = parent / pure.name
    if target.is_symlink() or target.is_file():
        os.unlink(target)


def _revert(
    root: Path, key: str, base: str, path: str, old_path: str | None, hunks: list[int] | None
) -> None:
    workspace = Workspace(root, max_file_bytes=RAW_LIMIT, context={"session_id": key})
    if hunks is None:
        if old_path is not None:
            _remove(workspace, path)
        before = _base_blob(root, base, old_path or path)
        if before is None:
            _remove(workspace, path)  # the file was added
        else:
            workspace.write_bytes(old_path or path, before)
        return
    found = parse_hunks(_file_patch(root, key, base, path, old_path))
    bad = [index for index in hunks if index < 0 or index >= len(found)]
    if not found:
        raise Invalid(f"{path!r} has no hunk to revert (binary, or only renamed).", field="hunks")
    if bad:
        raise Invalid(
            f"{path!r} has hunks 0 to {len(found) - 1}; no hunk {bad[0]}.",
            field="hunks",
            hunks=len(found),
        )
    current = workspace.read_bytes(path)
    try:
        workspace.write_bytes(path, unapply(current, found, hunks))
    except HunkMismatch as exc:
        raise Conflict("file_changed", f"{path!r} changed meanwhile ({exc}).") from None


async def revert(
    services: Services,
    turn_running: TurnRunning,
    session_id: str,
    path: str,
    hunks: list[int] | None,
) -> SessionChanges:
    """Put a changed file (or some hunks of it) back as at ``baseCommit``; a ``review``
    message records it. The changes answer after it."""
    record, repo, root = await _context(services, session_id)
    if turn_running(session_id):
        raise TurnInProgress("A turn is running; wait for it or cancel it before reverting.")
    with _confined(path):
        relative = tree.checked_relative(root, path, record.id)
    current = await changes(services, session_id, None)
    change = next((f for f in current["files"] if f["path"] == relative), None)
    if change is None:
        raise Conflict("nothing_to_revert", f"{path!r} has no change to revert.", {"path": path})
    if hunks is not None and change["binary"]:
        raise Invalid(f"{path!r} is binary: revert the whole file.", field="hunks")
    base = record.base_commit or checkpoints.EMPTY_TREE
    async with session_lock(services.writer, session_id):
        with _confined(path):
            await in_thread(_revert, root, record.id, base, relative, change["oldPath"], hunks)
    content: ReviewContent = {
        "type": "review",
        "action": "revert",
        "path": relative,
        "hunks": hunks,
        "by": "client",
    }
    await record_review(services.writer, record, as_json(content))
    log.info("review revert", extra={"session_id": session_id, "path": relative})
    return await changes(services, session_id, None)


# -- comments to the agent --------------------------------------------------------------


def _quoted_line(repo: Path, root: Path, base: str | None, key: str, comment: LineComment) -> str:
    """The commented line's text (new: the workspace now; old: the file at baseCommit)."""
    if comment.side == "new":
        data = tree.workspace_file(_workspace(root, key), comment.path).data
    else:
        if base is None:
            raise Conflict(
                "no_base_commit", "The session has no base commit: comment on new lines only."
            )
        data = tree.commit_file(repo, root, base, comment.path, RAW_LIMIT, key).data
    lines = data.decode("utf-8", "replace").splitlines()
    if comment.line > len(lines):
        raise Invalid(
            f"{comment.path} has {len(lines)} lines on the {comment.side} side; "
            f"no line {comment.line}.",
            field="line",
        )
    return lines[comment.line - 1]


def compose(comments: list[LineComment], quoted: list[str], text: str | None) -> str:
    """The prompt: each comment under the line it is about, then the reviewer's text."""
    parts = ["Review of your changes. Please address each comment."]
    for comment, line in zip(comments, quoted, strict=True):
        where = f"{comment.path}:{comment.line}"
        if comment.side == "old":
            where += " (the line as it was at the base commit)"
        parts.append(f"{where}\n> {line}\n{comment.body}")
    if text and text.strip():
        parts.append(text.strip())
    return "\n\n".join(parts)


async def review_prompt(
    services: Services,
    turn_running: TurnRunning,
    session_id: str,
    comments: list[LineComment],
    text: str | None,
) -> tuple[str, TextContent]:
    """The review's prompt (each commented line quoted, checked against the workspace and
    ``MAX_PROMPT_BYTES``) and the user message's content that keeps its comments, for the
    facade to start as a turn."""
    max_bytes = services.settings.max_prompt_bytes
    record, repo, root = await _context(services, session_id)
    if turn_running(session_id):
        raise TurnInProgress("A turn is running; send the review when it ends.")
    quoted: list[str] = []
    for comment in comments:
        with _confined(comment.path):
            comment.path = tree.checked_relative(root, comment.path, record.id)
            quoted.append(
                await in_thread(_quoted_line, repo, root, record.base_commit, record.id, comment)
            )
    prompt = compose(comments, quoted, text)
    if len(prompt.encode()) > max_bytes:
        raise TooLarge("prompt", max_bytes)
    stored_comments: list[ReviewComment] = [
        {"path": c.path, "line": c.line, "side": c.side, "body": c.body, "text": q}
        for c, q in zip(comments, quoted, strict=True)
    ]
    return prompt, {"type": "text", "text": prompt, "comments": stored_comments}
