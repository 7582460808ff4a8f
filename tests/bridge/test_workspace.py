"""Workspace: every path an agent names stays inside the root or is refused."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from agent_bridge.workspace import (
    FileNotFound,
    FileRefused,
    PathOutsideWorkspace,
    Workspace,
    WorkspaceError,
)
from tests.traversal_payloads import (
    ESCAPES,
    OUTSIDE_CONTENTS,
    TRAVERSAL_PAYLOADS,
    make_traversal_tree,
)

LABELS = [label for label, _ in TRAVERSAL_PAYLOADS]
SECURITY_LOGGER = "agent_sessions.security"


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, str]:
    return make_traversal_tree(tmp_path)


@pytest.fixture
def ws(tree: dict[str, str]) -> Workspace:
    return Workspace(tree["root"], max_file_bytes=1024, context={"session_id": "s-1"})


def snapshot_outside(outside: str) -> dict[str, object]:
    """Everything outside the root (not following symlinks), plus system files we aim at."""
    result: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(outside):
        if dirpath == outside:
            dirnames.remove("repo")
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            content = Path(path).read_bytes() if os.path.isfile(path) else None
            result[path] = (st.st_mode, st.st_size, st.st_mtime_ns, content)
    for path in ("/etc/passwd", "/etc/hostname"):
        if os.path.exists(path):
            st = os.stat(path)
            result[path] = (st.st_size, st.st_mtime_ns)
    return result


def is_inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


# -- the traversal catalogue ---------------------------------------------------


def test_catalogue_is_big_enough() -> None:
    assert len(TRAVERSAL_PAYLOADS) >= 30
    assert len(set(LABELS)) == len(LABELS)
    assert ESCAPES <= set(LABELS)


@pytest.mark.parametrize(("label", "template"), TRAVERSAL_PAYLOADS, ids=LABELS)
def test_resolve_refuses_escapes_and_keeps_the_rest_inside(
    ws: Workspace, tree: dict[str, str], label: str, template: str
) -> None:
    path = template.format(**tree)
    if label in ESCAPES:
        with pytest.raises(PathOutsideWorkspace):
            ws.resolve(path)
        return
    try:
        resolved = ws.resolve(path)
    except WorkspaceError:
        return  # refusing a harmless path is allowed too
    assert is_inside(resolved, ws.root)
    assert os.path.realpath(resolved) == str(resolved)


@pytest.mark.parametrize(("label", "template"), TRAVERSAL_PAYLOADS, ids=LABELS)
def test_read_refuses_or_reads_inside(
    ws: Workspace, tree: dict[str, str], label: str, template: str
) -> None:
    path = template.format(**tree)
    try:
        content = ws.read_text(path)
    except WorkspaceError as exc:
        if label in ESCAPES:
            assert isinstance(exc, PathOutsideWorkspace)
        return
    assert label not in ESCAPES
    assert content not in OUTSIDE_CONTENTS
    assert "root:" not in content


@pytest.mark.parametrize(("label", "template"), TRAVERSAL_PAYLOADS, ids=LABELS)
def test_write_never_changes_anything_outside(
    ws: Workspace, tree: dict[str, str], label: str, template: str
) -> None:
    path = template.format(**tree)
    # Guard first, so a broken resolve fails here instead of writing outside.
    try:
        resolved = ws.resolve(path)
    except WorkspaceError:
        resolved = None
    assert resolved is None or is_inside(resolved, ws.root)
    before = snapshot_outside(tree["outside"])
    try:
        ws.write_text(path, "written")
    except WorkspaceError as exc:
        if label in ESCAPES:
            assert isinstance(exc, PathOutsideWorkspace)
    else:
        assert label not in ESCAPES
        assert resolved is not None
        assert resolved.read_text() == "written"
    assert snapshot_outside(tree["outside"]) == before


@pytest.mark.parametrize("label", sorted(ESCAPES))
def test_every_escape_refusal_is_logged(
    ws: Workspace, tree: dict[str, str], label: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = dict(TRAVERSAL_PAYLOADS)[label].format(**tree)
    caplog.set_level(logging.WARNING, logger=SECURITY_LOGGER)
    with pytest.raises(PathOutsideWorkspace) as info:
        ws.read_text(path)
    [record] = [r for r in caplog.records if r.name == SECURITY_LOGGER]
    assert record.levelno == logging.WARNING
    assert record.__dict__["event"] == "path_refused"
    assert record.__dict__["path"] == path
    assert record.__dict__["reason"] == info.value.reason
    assert record.__dict__["session_id"] == "s-1"
    assert info.value.path == path


# -- specific reasons ------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../secret.txt", "outside"),
        ("/etc/passwd", "outside"),
        ("{root}-evil/x.txt", "outside"),
        ("link-file-out", "symlink_escape"),
        ("link-dir-out/file.txt", "symlink_escape"),
        ("link-root/etc/passwd", "symlink_escape"),
        ("link-zero", "symlink_escape"),
        ("a\x00b", "nul_byte"),
        ("bad\ud800name", "invalid_name"),
    ],
)
def test_resolve_reasons(ws: Workspace, tree: dict[str, str], path: str, reason: str) -> None:
    with pytest.raises(PathOutsideWorkspace) as info:
        ws.resolve(path.format(**tree))
    assert info.value.reason == reason


def test_fifo_is_refused_without_blocking(ws: Workspace) -> None:
    with pytest.raises(FileRefused) as info:
        ws.read_text("fifo")
    assert info.value.reason == "not_regular_file"
    with pytest.raises(FileRefused):
        ws.write_text("fifo", "x")


def test_directories_are_refused(ws: Workspace, tree: dict[str, str]) -> None:
    for path in ("sub", "sub/", tree["root"], "."):
        with pytest.raises(FileRefused) as info:
            ws.read_text(path)
        assert info.value.reason == "not_regular_file"
        with pytest.raises(FileRefused):
            ws.write_text(path, "x")


def test_trailing_slash_names_a_directory(ws: Workspace) -> None:
    with pytest.raises(FileRefused):
        ws.write_text("newdir/", "x")
    with pytest.raises(FileRefused):
        ws.read_text("inside.txt/")
    assert not (ws.root / "newdir").exists()


def test_file_used_as_directory_is_refused(ws: Workspace) -> None:
    with pytest.raises(FileRefused) as info:
        ws.write_text("inside.txt/child.txt", "x")
    assert info.value.reason == "not_a_directory"
    assert (ws.root / "inside.txt").read_text() == "inside\n"


def test_symlink_inside_pointing_inside_is_followed(ws: Workspace) -> None:
    assert ws.resolve("link-inside") == ws.root / "inside.txt"
    assert ws.read_text("link-inside") == "inside\n"
    ws.write_text("link-inside", "via link")
    assert (ws.root / "inside.txt").read_text() == "via link"
    assert os.path.islink(ws.root / "link-inside")


def test_symlink_loop_is_refused(ws: Workspace) -> None:
    with pytest.raises(PathOutsideWorkspace):
        ws.read_text("link-loop-a")
    with pytest.raises(PathOutsideWorkspace):
        ws.write_text("link-loop-a", "x")


def test_dangling_symlink_pointing_outside_is_refused(ws: Workspace, tree: dict[str, str]) -> None:
    os.symlink(os.path.join(tree["outside"], "planted.txt"), ws.root / "dangling")
    with pytest.raises(PathOutsideWorkspace):
        ws.write_text("dangling", "x")
    assert not os.path.exists(os.path.join(tree["outside"], "planted.txt"))


def test_hardlinked_file_is_not_written(ws: Workspace, tree: dict[str, str]) -> None:
    os.link(os.path.join(tree["outside"], "secret.txt"), ws.root / "hard.txt")
    with pytest.raises(FileRefused) as info:
        ws.write_text("hard.txt", "x")
    assert info.value.reason == "hardlink"
    assert Path(tree["outside"], "secret.txt").read_text() == OUTSIDE_CONTENTS[0]


def test_directory_swapped_for_symlink_after_resolve_is_refused(
    ws: Workspace, tree: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race the O_NOFOLLOW walk exists for: resolve said inside, then the dir moved."""
    (ws.root / "d").mkdir()
    stale = ws.resolve("d/x.txt")
    (ws.root / "d").rmdir()
    os.symlink(os.path.join(tree["outside"], "outside_dir"), ws.root / "d")
    monkeypatch.setattr(ws, "resolve", lambda path: stale)
    before = snapshot_outside(tree["outside"])
    with pytest.raises(PathOutsideWorkspace) as info:
        ws.write_text("d/x.txt", "x")
    assert info.value.reason == "symlink_escape"
    with pytest.raises(PathOutsideWorkspace):
        ws.read_text("d/x.txt")
    assert snapshot_outside(tree["outside"]) == before


def test_file_swapped_for_symlink_after_resolve_is_refused(
    ws: Workspace, tree: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = ws.resolve("inside.txt")
    os.unlink(stale)
    os.symlink(os.path.join(tree["outside"], "secret.txt"), stale)
    monkeypatch.setattr(ws, "resolve", lambda path: stale)
    with pytest.raises(PathOutsideWorkspace):
        ws.read_text("inside.txt")
    with pytest.raises(PathOutsideWorkspace):
        ws.write_text("inside.txt", "x")
    assert Path(tree["outside"], "secret.txt").read_text() == OUTSIDE_CONTENTS[0]


# -- the root ------------------------------------------------------------------------


def test_root_is_the_real_path(tree: dict[str, str], tmp_path: Path) -> None:
    os.symlink(tree["root"], tmp_path / "alias")
    ws = Workspace(tmp_path / "alias")
    assert ws.root == Path(tree["root"])
    assert ws.read_text(str(tmp_path / "alias" / "inside.txt")) == "inside\n"


def test_root_must_be_an_existing_directory(tree: dict[str, str]) -> None:
    with pytest.raises(FileNotFound):
        Workspace(os.path.join(tree["root"], "missing"))
    with pytest.raises(FileRefused) as info:
        Workspace(os.path.join(tree["root"], "inside.txt"))
    assert info.value.reason == "not_a_directory"


def test_context_may_not_shadow_log_record_fields(tree: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="clash"):
        Workspace(tree["root"], context={"message": "x"})


def test_root_replaced_by_symlink_is_detected(
    ws: Workspace, tree: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    ws.check_root()
    root = tree["root"]
    os.rename(root, root + "-moved")
    os.symlink(root + "-moved", root)
    caplog.set_level(logging.WARNING, logger=SECURITY_LOGGER)
    with pytest.raises(PathOutsideWorkspace) as info:
        ws.check_root()
    assert info.value.reason == "root_replaced"
    with pytest.raises(PathOutsideWorkspace):
        ws.read_text("inside.txt")
    with pytest.raises(PathOutsideWorkspace):
        ws.write_text("new.txt", "x")
    assert not os.path.exists(os.path.join(root + "-moved", "new.txt"))
    assert {r.__dict__["reason"] for r in caplog.records} == {"root_replaced"}


def test_root_replaced_by_another_directory_is_detected(
    ws: Workspace, tree: dict[str, str]
) -> None:
    root = tree["root"]
    os.rename(root, root + "-moved")
    os.mkdir(root)
    with pytest.raises(PathOutsideWorkspace) as info:
        ws.check_root()
    assert info.value.reason == "root_replaced"
    with pytest.raises(PathOutsideWorkspace):
        ws.write_text("new.txt", "x")
    assert os.listdir(root) == []


def test_root_removed_is_detected(tmp_path: Path) -> None:
    (tmp_path / "gone").mkdir()
    ws = Workspace(tmp_path / "gone")
    (tmp_path / "gone").rmdir()
    with pytest.raises(PathOutsideWorkspace) as info:
        ws.check_root()
    assert info.value.reason == "root_missing"


def test_root_alias_retargeted_is_detected(tree: dict[str, str], tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    os.symlink(tree["root"], alias)
    ws = Workspace(alias)
    alias.unlink()
    os.symlink(os.path.join(tree["outside"], "outside_dir"), alias)
    with pytest.raises(PathOutsideWorkspace):
        ws.check_root()
    with pytest.raises(PathOutsideWorkspace):
        ws.read_text(str(alias / "file.txt"))


# -- reading and writing ----------------------------------------------------------------


def test_read_missing_file(ws: Workspace, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=SECURITY_LOGGER)
    with pytest.raises(FileNotFound) as info:
        ws.read_text("missing.txt")
    assert info.value.reason == "not_found"
    with pytest.raises(FileNotFound):
        ws.read_text("no/such/dir/file.txt")
    assert caplog.records == []  # a missing file is an answer, not a security event


def test_read_relative_and_absolute(ws: Workspace) -> None:
    assert ws.read_text("sub/inner.txt") == "inner\n"
    assert ws.read_text(str(ws.root / "sub" / "inner.txt")) == "inner\n"
    assert ws.read_text("sub/../inside.txt") == "inside\n"


def test_read_replaces_invalid_utf8(ws: Workspace) -> None:
    (ws.root / "bin.txt").write_bytes(b"ok \xff\xfe done")
    assert ws.read_text("bin.txt") == "ok \ufffd\ufffd done"


@pytest.mark.parametrize(
    ("line", "limit", "expected"),
    [
        (None, None, "one\ntwo\nthree\nfour\n"),
        (1, None, "one\ntwo\nthree\nfour\n"),
        (2, None, "two\nthree\nfour\n"),
        (2, 2, "two\nthree\n"),
        (None, 1, "one\n"),
        (4, 1, "four\n"),
        (4, 10, "four\n"),
        (5, None, ""),
        (9, 3, ""),
        (1, 0, ""),
    ],
)
def test_read_line_and_limit(
    ws: Workspace, line: int | None, limit: int | None, expected: str
) -> None:
    (ws.root / "lines.txt").write_text("one\ntwo\nthree\nfour\n")
    assert ws.read_text("lines.txt", line=line, limit=limit) == expected


def test_read_line_and_limit_without_final_newline(ws: Workspace) -> None:
    (ws.root / "lines.txt").write_text("one\r\ntwo\nthree")
    assert ws.read_text("lines.txt", line=1, limit=1) == "one\r\n"
    assert ws.read_text("lines.txt", line=3) == "three"


@pytest.mark.parametrize(("line", "limit"), [(0, None), (-1, 2), (1, -1)])
def test_read_bad_range(ws: Workspace, line: int, limit: int | None) -> None:
    with pytest.raises(ValueError, match="line"):
        ws.read_text("inside.txt", line=line, limit=limit)


def test_size_limits(ws: Workspace) -> None:
    (ws.root / "exact.txt").write_bytes(b"x" * 1024)
    (ws.root / "big.txt").write_bytes(b"x" * 1025)
    assert ws.read_text("exact.txt") == "x" * 1024
    with pytest.raises(FileRefused) as info:
        ws.read_text("big.txt", line=1, limit=1)
    assert info.value.reason == "too_large"
    ws.write_text("w.txt", "é" * 512)  # 1024 bytes in UTF-8
    with pytest.raises(FileRefused) as info:
        ws.write_text("w.txt", "é" * 512 + "x")
    assert info.value.reason == "too_large"
    assert (ws.root / "w.txt").read_text() == "é" * 512


def test_big_existing_file_may_be_overwritten_with_small_content(ws: Workspace) -> None:
    (ws.root / "big.txt").write_bytes(b"x" * 5000)
    ws.write_text("big.txt", "small")
    assert (ws.root / "big.txt").read_text() == "small"


def test_write_creates_missing_file_and_parents(ws: Workspace) -> None:
    ws.write_text("new/deep/dir/file.txt", "hello\n")
    assert (ws.root / "new" / "deep" / "dir" / "file.txt").read_text() == "hello\n"
    ws.write_text(str(ws.root / "abs.txt"), "abs")
    assert (ws.root / "abs.txt").read_text() == "abs"


def test_write_truncates_existing_file(ws: Workspace) -> None:
    ws.write_text("inside.txt", "x")
    assert (ws.root / "inside.txt").read_text() == "x"
    ws.write_text("inside.txt", "")
    assert (ws.root / "inside.txt").read_bytes() == b""


def test_write_through_escaping_dir_creates_nothing(ws: Workspace, tree: dict[str, str]) -> None:
    with pytest.raises(PathOutsideWorkspace):
        ws.write_text("link-dir-out/a/b/c.txt", "x")
    assert not os.path.exists(os.path.join(tree["outside"], "outside_dir", "a"))


def test_lookalike_names_stay_literal(ws: Workspace) -> None:
    ws.write_text("．．／secret.txt", "x")
    assert (ws.root / "．．／secret.txt").read_text() == "x"
    ws.write_text("%2e%2e%2fsecret.txt", "y")
    assert (ws.root / "%2e%2e%2fsecret.txt").read_text() == "y"
    ws.write_text("\u2025/secret.txt", "z")
    assert (ws.root / "\u2025" / "secret.txt").read_text() == "z"


def test_file_refusals_are_logged(ws: Workspace, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=SECURITY_LOGGER)
    with pytest.raises(FileRefused):
        ws.read_text("fifo")
    [record] = caplog.records
    assert record.__dict__["event"] == "path_refused"
    assert record.__dict__["reason"] == "not_regular_file"
    assert record.__dict__["path"] == "fifo"
    assert record.__dict__["session_id"] == "s-1"


def test_error_message_does_not_reveal_the_root(ws: Workspace) -> None:
    with pytest.raises(PathOutsideWorkspace) as info:
        ws.read_text("link-file-out")
    assert str(ws.root) not in str(info.value)
