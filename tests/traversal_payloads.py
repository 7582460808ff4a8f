"""A catalogue of path-traversal payloads, shared by every test that hands a path to the server.

Each entry is `(label, path_template)`. Fill a template with `template.format(**tree)`,
where `tree = make_traversal_tree(tmp_path)`: `{root}` is the workspace root (`repo`),
`{outside}` the directory around it that holds what must never be reached:

    {outside}/secret.txt            "TOP-SECRET outside"
    {outside}/repo-evil/x.txt       a sibling sharing the root's name as a string prefix
    {outside}/outside_dir/file.txt
    {root}/inside.txt, {root}/sub/inner.txt
    {root}/link-file-out  -> {outside}/secret.txt
    {root}/link-dir-out   -> {outside}/outside_dir
    {root}/link-evil      -> ../repo-evil
    {root}/link-root      -> /
    {root}/link-zero      -> /dev/zero
    {root}/link-inside    -> inside.txt         (legitimate)
    {root}/sub/link-up    -> ../..
    {root}/link-loop-a <-> {root}/link-loop-b
    {root}/fifo                                 (os.mkfifo)

A safe server refuses each payload or keeps it inside the root; `ESCAPES` lists the
labels that reach outside the root and so must be refused.
"""

from __future__ import annotations

import os
from pathlib import Path

FORBIDDEN_TEXT = "TOP-SECRET outside"
OUTSIDE_CONTENTS = (FORBIDDEN_TEXT, "EVIL sibling", "OUTSIDE dir file")

TRAVERSAL_PAYLOADS: list[tuple[str, str]] = [
    # `..` chains
    ("dotdot", "../secret.txt"),
    ("dotdot_chain", "../../../../../../../../../../etc/passwd"),
    ("dotdot_deep", "a/b/c/../../../../secret.txt"),
    ("dotdot_from_sub", "sub/../../secret.txt"),
    ("dotdot_dot_segments", "./././../secret.txt"),
    ("dotdot_double_slash", "..//secret.txt"),
    ("dotdot_empty_segments", "sub//..//..//secret.txt"),
    ("dotdot_trailing_slash", "../secret.txt/"),
    ("dotdot_newline_segment", "sub\n/../../secret.txt"),
    ("abs_root_dotdot", "{root}/../secret.txt"),
    ("abs_root_parent", "{root}/.."),
    ("abs_root_dotdot_deep", "{root}/sub/../../outside_dir/file.txt"),
    # absolute paths elsewhere
    ("abs_etc_passwd", "/etc/passwd"),
    ("abs_double_slash", "//etc/passwd"),
    ("abs_outside_secret", "{outside}/secret.txt"),
    ("abs_outside_dir", "{outside}"),
    ("abs_dev_zero", "/dev/zero"),
    ("abs_proc_self_root", "/proc/self/root/etc/passwd"),
    ("abs_fs_root", "/"),
    # siblings sharing the string prefix
    ("sibling_prefix", "{root}-evil/x.txt"),
    ("sibling_via_dotdot", "{root}/../repo-evil/x.txt"),
    ("sibling_relative", "../repo-evil/x.txt"),
    ("sibling_repo_dotdot", "repo/../repo-evil/x.txt"),
    # symlinks pointing out
    ("symlink_file_out", "link-file-out"),
    ("symlink_file_out_abs", "{root}/link-file-out"),
    ("symlink_dir_out", "link-dir-out/file.txt"),
    ("symlink_dir_out_new_file", "link-dir-out/new.txt"),
    ("symlink_dir_out_trailing_slash", "link-dir-out/"),
    ("symlink_dir_out_dotdot", "link-dir-out/../secret.txt"),
    ("symlink_sibling", "link-evil/x.txt"),
    ("symlink_fs_root", "link-root/etc/passwd"),
    ("symlink_fs_root_dotdot", "link-root/../etc/passwd"),
    ("symlink_dev_zero", "link-zero"),
    ("symlink_up_from_sub", "sub/link-up/secret.txt"),
    ("symlink_loop", "link-loop-a"),
    # special files and NUL bytes
    ("fifo", "fifo"),
    ("nul_byte", "inside.txt\x00.png"),
    ("nul_byte_traversal", "../secret.txt\x00inside.txt"),
    # encodings and look-alikes: literal names, never separators or dots
    ("url_encoded", "%2e%2e%2fsecret.txt"),
    ("url_encoded_upper", "%2E%2E%2F%2E%2E%2Fetc%2Fpasswd"),
    ("url_double_encoded", "%252e%252e%252fsecret.txt"),
    ("overlong_utf8_encoded", "..%c0%afsecret.txt"),
    ("fullwidth_dots_slash", "．．／secret.txt"),
    ("two_dot_leader", "\u2025/secret.txt"),
    ("one_dot_leaders", "\u2024\u2024/secret.txt"),
    ("division_slash", "..\u2215secret.txt"),
    ("backslash", "..\\secret.txt"),
    ("backslash_abs", "\\etc\\passwd"),
    ("tab_dotdot", "..\t/secret.txt"),
    ("tilde", "~/secret.txt"),
    ("dots_three", ".../secret.txt"),
]

ESCAPES: frozenset[str] = frozenset(
    {
        "dotdot",
        "dotdot_chain",
        "dotdot_deep",
        "dotdot_from_sub",
        "dotdot_dot_segments",
        "dotdot_double_slash",
        "dotdot_empty_segments",
        "dotdot_trailing_slash",
        "dotdot_newline_segment",
        "abs_root_dotdot",
        "abs_root_parent",
        "abs_root_dotdot_deep",
        "abs_etc_passwd",
        "abs_double_slash",
        "abs_outside_secret",
        "abs_outside_dir",
        "abs_dev_zero",
        "abs_proc_self_root",
        "abs_fs_root",
        "sibling_prefix",
        "sibling_via_dotdot",
        "sibling_relative",
        "symlink_file_out",
        "symlink_file_out_abs",
        "symlink_dir_out",
        "symlink_dir_out_new_file",
        "symlink_dir_out_trailing_slash",
        "symlink_dir_out_dotdot",
        "symlink_sibling",
        "symlink_fs_root",
        "symlink_fs_root_dotdot",
        "symlink_dev_zero",
        "symlink_up_from_sub",
        "nul_byte",
        "nul_byte_traversal",
    }
)


def make_traversal_tree(tmp_path: Path) -> dict[str, str]:
    """Build the tree described above under `tmp_path`; return the placeholders."""
    outside = Path(os.path.realpath(tmp_path))
    root = outside / "repo"
    (root / "sub").mkdir(parents=True)
    (root / "inside.txt").write_text("inside\n")
    (root / "sub" / "inner.txt").write_text("inner\n")
    (outside / "secret.txt").write_text(FORBIDDEN_TEXT)
    (outside / "repo-evil").mkdir()
    (outside / "repo-evil" / "x.txt").write_text("EVIL sibling")
    (outside / "outside_dir").mkdir()
    (outside / "outside_dir" / "file.txt").write_text("OUTSIDE dir file")
    links = {
        "link-file-out": str(outside / "secret.txt"),
        "link-dir-out": str(outside / "outside_dir"),
        "link-evil": "../repo-evil",
        "link-root": "/",
        "link-zero": "/dev/zero",
        "link-inside": "inside.txt",
        "sub/link-up": "../..",
        "link-loop-a": "link-loop-b",
        "link-loop-b": "link-loop-a",
    }
    for name, target in links.items():
        os.symlink(target, root / name)
    os.mkfifo(root / "fifo")
    return {"root": str(root), "outside": str(outside)}
