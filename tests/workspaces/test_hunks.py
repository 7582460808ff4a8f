"""server.sessions.workspaces.hunks against git's own patches: putting back every hunk
gives the old file, any one hunk alone touches only its lines, whatever the file's ends
("No newline at end of file") and whichever side a hunk is empty on."""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import pytest

from server.sessions.workspaces.hunks import HunkMismatch, parse_hunks, unapply

OLD = "".join(f"line {n}\n" for n in range(1, 41))
CASES = {
    "two edits": OLD.replace("line 3\n", "three\n").replace("line 30\n", "thirty\n"),
    "insert and delete": OLD.replace("line 10\n", "line 10\nnew a\nnew b\n").replace(
        "line 25\nline 26\n", ""
    ),
    "no newline at the end": OLD[:-1].replace("line 2\n", "two\n"),
    "newline added at the end": OLD + "tail",
    "emptied": "",
    "from nothing": None,
}


def patch_of(tmp: Path, old: str, new: str) -> bytes:
    (tmp / "a").write_text(old)
    (tmp / "b").write_text(new)
    done = subprocess.run(
        ["git", "diff", "--no-index", "--no-color", "a", "b"], cwd=tmp, capture_output=True
    )
    assert done.returncode == 1, done.stderr
    return done.stdout


@pytest.mark.parametrize("name", list(CASES))
def test_every_subset_of_hunks_put_back(tmp_path: Path, name: str) -> None:
    old, new = (OLD, CASES[name]) if CASES[name] is not None else ("", OLD)
    assert new is not None
    hunks = parse_hunks(patch_of(tmp_path, old, new))
    assert hunks
    everything = list(range(len(hunks)))
    assert unapply(new.encode(), hunks, everything) == old.encode()
    for size in range(1, len(hunks)):
        for chosen in itertools.combinations(everything, size):
            partial = unapply(new.encode(), hunks, list(chosen)).decode()
            rest = [i for i in everything if i not in chosen]
            assert (
                unapply(
                    partial.encode(),
                    parse_hunks(patch_of(tmp_path, old, partial)),
                    list(range(len(rest))),
                )
                == old.encode()
            )


def test_a_file_changed_since_is_refused(tmp_path: Path) -> None:
    new = CASES["two edits"]
    assert new is not None
    hunks = parse_hunks(patch_of(tmp_path, OLD, new))
    with pytest.raises(HunkMismatch):
        unapply(new.replace("thirty", "30").encode(), hunks, [1])
