"""The files of a session's workspace for ``@``-mentions (API.md, ``GET …/files``).

A git work tree lists its tracked plus untracked-not-ignored files (``git ls-files``); a
plain directory is walked. Nothing under ``.git`` and nothing outside the root is listed
(symlinked directories are not followed). A listing is cached per root for ``TTL``
seconds, and dropped sooner when git's index changes (its mtime and size), so a query on
a 50 000-file repository is a regex pass over cached strings.

Matching: the query's characters in order, case-insensitive (a subsequence); best first:
a match inside the file name before one across directories, then a tighter match, then a
shorter path.
"""

from __future__ import annotations

import bisect
import heapq
import os
import re
import subprocess
import threading
import time
from pathlib import Path

__all__ = ["INDEX", "TTL", "FileIndex", "match_files"]

TTL = 5.0
_SCORE_ALL = 3000


def _blank_dirs(path: str) -> str:
    cut = path.rfind("/") + 1
    return "\0" * cut + path[cut:]


_MAX_FILES = 500_000


class _Listing:
    """One work tree's paths at ``made``, laid out for matching."""

    def __init__(
        self, paths: list[str], lowered: list[str], made: float, index_stat: tuple[int, int] | None
    ) -> None:
        self.paths = paths
        self.lowered = lowered
        self.made = made
        self.index_stat = index_stat
        # The lowered paths, one per line (no path holds a newline: those are left out),
        # where each starts in it, and the same lines with every directory part blanked
        # out (offsets kept).
        self.starts: list[int] = []
        offset = 0
        for path in lowered:
            self.starts.append(offset)
            offset += len(path) + 1
        self.joined = "\n".join(lowered)
        self.joined_names = "\n".join(_blank_dirs(p) for p in lowered)


def _index_stat(root: Path) -> tuple[int, int] | None:
    try:
        stat = (root / ".git" / "index").stat()
    except OSError:
        try:  # a worktree: .git is a file naming the real git dir
            text = (root / ".git").read_text()
            gitdir = Path(text.split("gitdir:", 1)[1].strip())
            stat = (gitdir / "index").stat()
        except (OSError, IndexError):
            return None
    return (stat.st_mtime_ns, stat.st_size)


def _git_files(root: Path) -> list[str] | None:
    try:
        done = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=root,
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    names = done.stdout.decode("utf-8", "replace").split("\0")
    seen: set[str] = set()
    out = []
    for name in names:
        if name and name not in seen and not name.startswith(".git/") and "\n" not in name:
            seen.add(name)
            out.append(name)
    return out


def _walk(root: Path) -> list[str]:
    out: list[str] = []
    for directory, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        base = os.path.relpath(directory, root)
        for name in sorted(files):
            if "\n" in name:
                continue
            out.append(name if base == "." else f"{base}/{name}")
            if len(out) >= _MAX_FILES:
                return out
    return out


class FileIndex:
    """Cached listings, one per workspace root; safe to use from worker threads."""

    def __init__(self, ttl: float = TTL) -> None:
        self.ttl = ttl
        self._lock = threading.Lock()
        self._listings: dict[Path, _Listing] = {}

    def files(self, root: Path) -> _Listing:
        stat = _index_stat(root)
        now = time.monotonic()
        with self._lock:
            cached = self._listings.get(root)
        if cached is not None and now - cached.made < self.ttl and cached.index_stat == stat:
            return cached
        paths = _git_files(root) if (root / ".git").exists() else None
        if paths is None:
            paths = _walk(root)
        listing = _Listing(paths, [p.lower() for p in paths], now, stat)
        with self._lock:
            self._listings[root] = listing
        return listing

    def search(self, root: Path, query: str, limit: int) -> list[str]:
        return match_files(self.files(root), query, limit)


def _chain(query: str, line_bound: bool) -> str:
    """``a[^b]*b[^c]*c``: a subsequence without backtracking (each gap stops at the next
    character), so a pass over 50 000 paths stays linear."""
    newline = "\\n" if line_bound else ""
    parts = [re.escape(query[0])]
    for char in query[1:]:
        parts.append(f"[^{re.escape(char)}{newline}]*{re.escape(char)}")
    return "".join(parts)


def _lines(pattern: re.Pattern[str], joined: str, starts: list[int]) -> list[int]:
    """The indexes of the lines of ``joined`` that ``pattern`` matches (one C pass)."""
    found: list[int] = []
    last = -1
    for match in pattern.finditer(joined):
        index = bisect.bisect_right(starts, match.start()) - 1
        if index != last:
            found.append(index)
            last = index
    return found


def match_files(listing: _Listing, query: str, limit: int) -> list[str]:
    query = "".join(query.lower().split())
    if not query:
        return listing.paths[:limit]
    within_line = re.compile(_chain(query, True))
    matched = _lines(within_line, listing.joined, listing.starts)
    in_name = set(_lines(within_line, listing.joined_names, listing.starts))
    lowered = listing.lowered
    if len(matched) > _SCORE_ALL:  # a short query on a big tree: name, then length
        best = heapq.nsmallest(
            limit, matched, key=lambda i: (i not in in_name, len(lowered[i]), lowered[i])
        )
        return [listing.paths[i] for i in best]
    tight = re.compile(_chain(query, False))
    scored: list[tuple[int, int, int, int]] = []
    for index in matched:
        path = lowered[index]
        start = path.rfind("/") + 1 if index in in_name else 0
        span = tight.search(path, start)
        width = span.end() - span.start() if span is not None else len(path)
        scored.append((index not in in_name, width, len(path), index))
    return [listing.paths[index] for *_, index in heapq.nsmallest(limit, scored)]


INDEX = FileIndex()
"""The process's listings."""
