"""The review (issue 28) in a real browser: the review takes the main area (the
conversation one tab away), changed files as a tree, a hunk reverted, a line commented and
the review sent to the agent, commit and merge, the merged state; long lines scroll
sideways; the file tree and viewer (workspace and base commit) opened from a tool card
and from the diff; a session without a worktree says its changes are the repository's;
tool cards with relative paths, "not applied" on a rejected write, and a line for a mode
change. Screenshots go to docs/ (review*.png)."""

from __future__ import annotations

import shutil
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
from tests.conftest import ROOT  # noqa: E402
from tests.workspaces.support import git, make_repo  # noqa: E402

pytestmark = pytest.mark.browser
OpenPage = Callable[..., Any]
WIDE = {"width": 1440, "height": 900}
LINES = [f"line {n}\n" for n in range(1, 31)]
LONG = "x = " + " + ".join(f"value_{i}" for i in range(60)) + "\n"


def server_env(workspace_root: Path) -> dict[str, str]:
    make_repo(
        workspace_root / "proj",
        {"README.md": "# Proj\n", "long.txt": "".join(LINES), "src/calc.py": LONG},
    )
    return {"MAX_CONCURRENT_SESSIONS": "20"}


def docs_shot(page: Any, name: str) -> None:
    """A screenshot for docs/ (the guide shows them)."""
    path = ROOT / "test-output" / "screenshots" / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path))
    shutil.copyfile(path, ROOT / "docs" / f"{name}.png")


def isolated_session(page: Any, repo: str = "proj") -> str:
    expect(page.locator("#new-repo option").first).to_be_attached()
    page.select_option("#new-repo", label=repo)
    page.check("#new-isolated")
    page.get_by_role("button", name="Start session").click()
    expect(page).to_have_url(SESSION_URL)
    expect(page.locator("#prompt-input")).to_be_enabled()
    return str(page.url.rsplit("/", 1)[1])


def tab(page: Any, name: str) -> Any:
    return page.get_by_role("tab", name=name)


def test_review_revert_comment_send_merge(module_server: SharedServer, open_page: OpenPage) -> None:
    proj = module_server.workspace_root / "proj"
    page = open_page(module_server.url, viewport=WIDE)
    session_id = isolated_session(page)
    worktree = module_server.workspace_root.resolve() / ".worktrees" / session_id
    send(page, "write notes.txt hello")
    page.get_by_role("button", name="Allow", exact=True).click()
    wait_turns(page, 1)
    card = page.locator(".tool.card").filter(has_text="Write notes.txt")
    expect(card.locator(".locations code")).to_have_text("notes.txt")  # not /…/.worktrees/…
    changed = list(LINES)
    changed[1] = "line 2 changed\n"
    changed[25] = "line 26 changed\n"
    (worktree / "long.txt").write_text("".join(changed))
    (worktree / "src" / "calc.py").write_text(LONG.replace("value_59", "value_59 + extra"))

    tab(page, "Review").click()
    review = page.locator(".review-pane")
    expect(review).to_be_visible()
    expect(page.locator(".transcript")).to_be_hidden()  # the review takes the main area
    files = review.locator(".changes-file")
    expect(files).to_have_count(3)
    expect(review.locator(".tree-dir-name")).to_have_text(["▸src/"])
    files.filter(has_text="long.txt").click()
    diff = review.locator(".patch-view")
    expect(diff.locator(".revert-hunk")).to_have_count(2)

    # a comment on the new line 2
    diff.locator('button.ln-comment[data-side="new"][data-line="2"]').click()
    diff.locator(".comment-form textarea").fill("Say which line changed and why.")
    diff.get_by_role("button", name="Add comment").click()
    expect(diff.locator(".review-comment")).to_contain_text("Say which line changed")
    expect(review.locator(".review-bar")).to_contain_text("1 comment")
    docs_shot(page, "review")

    # revert the second hunk only
    diff.locator('.revert-hunk[data-hunk="1"]').click()
    expect(diff.locator(".revert-hunk")).to_have_count(1)
    expected = list(LINES)
    expected[1] = "line 2 changed\n"
    assert (worktree / "long.txt").read_text() == "".join(expected)
    expect(diff.locator(".review-comment")).to_have_count(1)  # the comment stays

    # long lines scroll sideways instead of being cut
    files.filter(has_text="calc.py").click()
    review.get_by_role("button", name="Side by side").click()
    expect(diff).to_have_attribute("data-state", "done")
    widths = diff.evaluate("(el) => [el.scrollWidth, el.clientWidth]")
    assert widths[0] > widths[1] + 100, widths
    expect(diff.locator(".code.add").first).to_contain_text("value_59 + extra")
    diff.evaluate("(el) => { el.scrollLeft = (el.scrollWidth - el.clientWidth) / 2; }")
    docs_shot(page, "review-split")
    review.get_by_role("button", name="Unified").click()

    # send the review: one prompt quoting the line, back in the conversation
    review.locator(".review-text").fill("Thanks.")
    review.get_by_role("button", name="Send review (1)").click()
    expect(page.locator(".transcript")).to_be_visible()
    prompt = page.locator(".msg-user").last
    expect(prompt).to_contain_text("long.txt:2")
    expect(prompt).to_contain_text("> line 2 changed")
    expect(prompt).to_contain_text("Say which line changed and why.")
    expect(page.locator(".review-note")).to_contain_text("Reverted in review: long.txt (hunk 2)")
    wait_turns(page, 2)

    # commit and merge; the merged state shows, with the commit and the branch
    tab(page, "Review").click()
    review.locator(".commit-message").fill("Review done")
    review.get_by_role("button", name="Commit").click()
    expect(review.locator(".changes-result")).to_contain_text("Committed")
    review.get_by_role("button", name="Merge into main").click()
    merged = review.locator(".review-merged")
    expect(merged).to_be_visible()
    head = git(proj, "rev-parse", "main")
    expect(merged).to_contain_text("Merged into main")
    expect(merged.locator(".merged-commit")).to_have_text(head[:12])
    assert (proj / "notes.txt").read_text() == "hello"
    docs_shot(page, "review-merged")
    # a second merge says it plainly, not as an error
    review.get_by_role("button", name="Merge into main").click()
    expect(review.locator(".changes-result .muted")).to_contain_text("already has every commit")
    page.reload()
    tab(page, "Review").click()
    expect(page.locator(".review-merged")).to_contain_text("Merged into main")


def test_files_view_from_a_tool_card_and_the_diff(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    page = open_page(module_server.url, viewport=WIDE)
    session_id = isolated_session(page)
    worktree = module_server.workspace_root.resolve() / ".worktrees" / session_id
    send(page, "write docs/guide.md Hello guide")
    page.get_by_role("button", name="Allow", exact=True).click()
    wait_turns(page, 1)
    card = page.locator(".tool.card").filter(has_text="Write docs/guide.md")
    card.locator(".locations .path-link").click()
    files = page.locator(".files-pane")
    expect(files).to_be_visible()
    expect(files.locator(".viewer-path")).to_have_text("docs/guide.md")
    expect(files.locator(".file-view .fl .code")).to_have_text(["Hello guide"])
    expect(files.locator('.tree-file[aria-pressed="true"] .file-path')).to_have_text("guide.md")

    (worktree / "long.txt").write_text("".join(LINES).replace("line 20\n", "twenty\n"))
    tab(page, "Review").click()
    review = page.locator(".review-pane")
    review.locator(".changes-file").filter(has_text="long.txt").click()
    review.get_by_role("button", name="View file").click()
    expect(files.locator(".viewer-path")).to_have_text("long.txt")
    expect(files.locator('.fl[data-line="20"] .ln')).to_have_text("20")
    expect(files.locator('.fl[data-line="20"] .code')).to_have_text("twenty")
    # the base commit, read-only
    files.locator(".files-ref").select_option(index=1)
    expect(files.locator('.fl[data-line="20"] .code')).to_have_text("line 20")
    expect(files.locator(".viewer-note")).to_contain_text("base commit")
    files.locator("details.tree-dir", has_text="src").locator("summary").click()
    files.get_by_role("button", name="calc.py").click()
    expect(files.locator(".fl .code")).to_contain_text(["x = value_0"])
    docs_shot(page, "review-files")
    tab(page, "Conversation").click()
    expect(page.locator("#prompt-input")).to_be_visible()


def test_repository_scope_rejected_write_and_mode_line(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    proj = module_server.workspace_root / "proj"
    page = open_page(module_server.url, viewport=WIDE)
    expect(page.locator("#new-repo option").first).to_be_attached()
    page.select_option("#new-repo", label="proj")
    page.get_by_role("button", name="Start session").click()
    expect(page).to_have_url(SESSION_URL)
    send(page, "write rejected.txt nope")
    page.get_by_role("button", name="Reject", exact=True).click()
    wait_turns(page, 1)
    card = page.locator(".tool.card").filter(has_text="Write rejected.txt")
    expect(card.locator(".not-applied-badge")).to_be_visible()
    expect(card.locator("figure.diff.not-applied")).to_be_visible()
    expect(card.locator(".tool-section-label").filter(has_text="not applied")).to_have_count(1)
    assert not (proj / "rejected.txt").exists()

    page.get_by_label("Mode", exact=True).select_option("ask")
    note = page.locator(".controls-note")
    expect(note).to_contain_text("Mode set to")
    expect(note).to_contain_text("by you")

    (proj / "README.md").write_text("# Proj, edited by someone else\n")
    try:
        tab(page, "Review").click()
        review = page.locator(".review-pane")
        expect(review.locator(".review-scope")).to_contain_text("the repository's changes")
        expect(review.locator(".changes-file")).to_contain_text(["README.md"])
        docs_shot(page, "review-scope")
    finally:
        git(proj, "checkout", "--", "README.md")
