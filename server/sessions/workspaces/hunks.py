"""The hunks of one file's unified diff, and putting some of them back.

A hunk is numbered from 0 in the order of the file's patch (API.md, Review), the patch a
client was shown by ``GET …/changes``: git's own diff of the file, parsed here, never
recomputed by another algorithm (whose hunks would differ)."""

from __future__ import annotations

import re

import msgspec

__all__ = ["Hunk", "HunkMismatch", "parse_hunks", "unapply"]

_HEADER = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class HunkMismatch(Exception):
    """The file no longer holds what the hunk says it added (it changed meanwhile)."""


class Hunk(msgspec.Struct):
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    old_lines: list[bytes] = msgspec.field(default_factory=list)
    new_lines: list[bytes] = msgspec.field(default_factory=list)

    def new_index(self) -> int:
        """Where the hunk's new lines start, counted from 0 (``+c,0`` inserts after c)."""
        return self.new_start if self.new_count == 0 else self.new_start - 1


def parse_hunks(patch: bytes) -> list[Hunk]:
    """Every hunk of a one-file patch, each with its old and new lines (line ends kept;
    a line marked "No newline at end of file" has none)."""
    hunks: list[Hunk] = []
    last: list[list[bytes]] = []  # the sides the previous line went to
    for line in patch.split(b"\n"):
        header = _HEADER.match(line)
        if header:
            old_count = header.group(2)
            new_count = header.group(4)
            hunks.append(
                Hunk(
                    int(header.group(1)),
                    1 if old_count is None else int(old_count),
                    int(header.group(3)),
                    1 if new_count is None else int(new_count),
                )
            )
            last = []
            continue
        if not hunks:
            continue  # the file's header lines
        hunk = hunks[-1]
        marker, body = line[:1], line[1:] + b"\n"
        if marker == b" ":
            hunk.old_lines.append(body)
            hunk.new_lines.append(body)
            last = [hunk.old_lines, hunk.new_lines]
        elif marker == b"-":
            hunk.old_lines.append(body)
            last = [hunk.old_lines]
        elif marker == b"+":
            hunk.new_lines.append(body)
            last = [hunk.new_lines]
        elif marker == b"\\":
            for side in last:
                side[-1] = side[-1][:-1]
    return hunks


def unapply(current: bytes, hunks: list[Hunk], chosen: list[int]) -> bytes:
    """``current`` (the file the patch made) with the chosen hunks put back as they were.
    Hunks never overlap, so replacing from the last one up keeps the earlier indexes."""
    lines = current.splitlines(keepends=True)
    for index in sorted(set(chosen), reverse=True):
        hunk = hunks[index]
        start = hunk.new_index()
        if lines[start : start + hunk.new_count] != hunk.new_lines:
            raise HunkMismatch(f"hunk {index} no longer matches the file")
        lines[start : start + hunk.new_count] = hunk.old_lines
    return b"".join(lines)
