"""Worktrees and changes in a real browser: the "Isolated worktree" option, the branch
in the header, the Changes panel (files, +/- counts, unified and side-by-side diffs with
highlighting, the per-turn filter), Commit, Merge into base with its conflicts, Restore
files to here, Delete worktree, and a 5 000-line patch drawn while the page stays usable."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "playwright.sync_api",
    reason="playwright is not installed (run scripts/install-browser)",
    exc_type=ImportError,
)

from playwright.sync_api import expect  # noqa: E402

from tests.browser.conftest import SharedServer  # noqa: E402
from tests.browser.ui import SESSION_URL, send, wait_turns  # noqa: E402
from tests.workspaces.support import git, make_repo  # noqa: E402

pytestmark = pytest.mark.browser
OpenPage = Callable[..., Any]


def server_env(workspace_root: Path) -> dict[str, str]:
    make_repo(
        workspace_root / "proj", {"README.md": "# Proj\n", "app.py": "def main():\n    return 1\n"}
    )
    return {"MAX_CONCURRENT_SESSIONS": "20"}


def isolated_session(page: Any) -> str:
    expect(page.locator("#new-repo option").first).to_be_attached()
    page.select_option("#new-repo", label="proj")
    page.check("#new-isolated")
    page.get_by_role("button", name="Start session").click()
    expect(page).to_have_url(SESSION_URL)
    expect(page.locator("#prompt-input")).to_be_enabled()
    return str(page.url.rsplit("/", 1)[1])


def write(page: Any, path: str, text: str, turns: int) -> None:
    send(page, f"write {path} {text}")
    page.get_by_role("button", name="Allow", exact=True).click()
    wait_turns(page, turns)


def open_changes(page: Any) -> Any:
    page.get_by_role("tab", name="Review").click()
    panel = page.locator(".review-pane")
    expect(panel).to_be_visible()
    return panel


def test_isolated_session_changes_commit_and_merge(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    proj = module_server.workspace_root / "proj"
    page = open_page(module_server.url)
    session_id = isolated_session(page)
    branch = f"agent/{session_id.replace('-', '')[:8]}"
    expect(page.locator(".session-meta .branch")).to_contain_text(branch)
    write(page, "notes.txt", "hello", 1)
    write(page, "app.py", "def main(): return 2", 2)

    panel = open_changes(page)
    files = panel.locator(".changes-file")
    expect(files).to_have_count(2)
    expect(panel.locator(".changes-summary")).to_contain_text("2 files")
    notes = files.filter(has_text="notes.txt")
    expect(notes).to_contain_text("+1")
    expect(notes).to_contain_text("−0")
    app = files.filter(has_text="app.py")
    app.click()
    view = panel.locator(".patch-view")
    expect(view.locator(".pl.add")).to_contain_text("def main(): return 2")
    expect(view.locator(".pl.add .tok-keyword").first).to_have_text("def")  # highlighted
    expect(view.locator(".pl.del")).to_have_count(2)
    panel.get_by_role("button", name="Side by side").click()
    expect(view).to_have_class("patch-view split-view")
    expect(view.locator(".code.del").first).to_contain_text("def main():")
    expect(view.locator(".code.add").first).to_contain_text("return 2")

    # what did the first turn change: only notes.txt
    page.get_by_role("tab", name="Conversation").click()
    page.locator(".msg-user").first.get_by_role("button", name="Changes").click()
    expect(files).to_have_count(1)
    expect(files.first).to_contain_text("notes.txt")
    panel.locator(".changes-run").select_option("")
    expect(files).to_have_count(2)

    panel.locator(".commit-message").fill("Notes and a better main")
    panel.get_by_role("button", name="Commit").click()
    expect(panel.locator(".changes-result")).to_contain_text("Committed")
    expect(panel.locator(".changes-result")).to_contain_text(branch)
    assert git(proj, "log", "-1", "--format=%s", branch) == "Notes and a better main"

    panel.get_by_role("button", name="Merge into main").click()
    expect(panel.locator(".changes-result")).to_contain_text("Merged into main")
    assert (proj / "notes.txt").read_text() == "hello"

    # the commit and the merge each left a line in the conversation
    page.get_by_role("tab", name="Conversation").click()
    expect(page.locator(".commit-note")).to_contain_text(f"on {branch} (2 files)")
    expect(page.locator(".merge-note")).to_contain_text("Merged into main as")


def test_merge_conflicts_are_listed(module_server: SharedServer, open_page: OpenPage) -> None:
    proj = module_server.workspace_root / "proj"
    page = open_page(module_server.url)
    isolated_session(page)
    write(page, "README.md", "theirs", 1)
    panel = open_changes(page)
    panel.locator(".commit-message").fill("theirs")
    panel.get_by_role("button", name="Commit").click()
    expect(panel.locator(".changes-result")).to_contain_text("Committed")
    (proj / "README.md").write_text("ours\n")
    git(proj, "commit", "-q", "-am", "ours")
    before = git(proj, "rev-parse", "main")
    panel.get_by_role("button", name="Merge into main").click()
    expect(panel.locator(".conflict-files li")).to_have_text(["README.md"])
    assert git(proj, "rev-parse", "main") == before


def test_restore_files_and_delete_worktree(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    page = open_page(module_server.url)
    session_id = isolated_session(page)
    worktree = module_server.workspace_root.resolve() / ".worktrees" / session_id
    write(page, "notes.txt", "one", 1)
    write(page, "extra.txt", "two", 2)
    assert (worktree / "extra.txt").exists()
    page.locator(".msg-user").nth(1).get_by_role("button", name="Restore files to here").click()
    expect(page.locator(".msg-user")).to_have_count(1)
    expect(page.locator("#prompt-input")).to_have_value("write extra.txt two")
    assert not (worktree / "extra.txt").exists()
    assert (worktree / "notes.txt").read_text() == "one"

    page.get_by_role("button", name="Complete").click()
    expect(page.locator(".badge").first).to_have_text("completed")
    panel = open_changes(page)
    panel.get_by_role("button", name="Delete worktree").click()
    expect(panel.locator(".changes-result")).to_contain_text("worktree was deleted")
    assert not worktree.exists()


def test_a_5000_line_patch_is_drawn_while_the_page_stays_usable(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    page = open_page(module_server.url)
    session_id = isolated_session(page)
    worktree = module_server.workspace_root.resolve() / ".worktrees" / session_id
    (worktree / "big.py").write_text("".join(f"value_{i} = {i}  # line {i}\n" for i in range(5000)))
    panel = open_changes(page)
    expect(panel.locator(".changes-file")).to_contain_text("+5000")
    view = panel.locator(".patch-view")
    page.get_by_role("tab", name="Conversation").click()  # the page answers during the drawing
    box = page.locator("#prompt-input")
    box.fill("typed while the diff is drawn")
    page.get_by_role("tab", name="Review").click()
    # a wait, not a speed check: a loaded CI box draws slower (the bound is generous)
    expect(view).to_have_attribute("data-state", "done", timeout=90_000)
    expect(view.locator(".pl.add")).to_have_count(5000)
    expect(box).to_have_value("typed while the diff is drawn")
    expect(view.locator(".tok-comment").first).to_have_text("# line 0")
