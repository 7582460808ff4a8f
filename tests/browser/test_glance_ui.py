"""A hundred sessions at a glance in a real browser: search with highlighted snippets
that open the session at the matching message, archive and purge (through the purge
dialog), queued prompts above the prompt box during a turn, the keyboard shortcuts and
their overlay, and the new-session form's choices."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from typing import Any

import httpx
import pytest

pytest.importorskip(
    "playwright.sync_api",
    reason="playwright is not installed (run scripts/install-browser)",
    exc_type=ImportError,
)

from playwright.sync_api import Page, expect  # noqa: E402

from tests.browser.conftest import SharedServer  # noqa: E402
from tests.browser.ui import send, start_session, wait_turns  # noqa: E402

pytestmark = pytest.mark.browser

OpenPage = Callable[..., Any]


def _http(server: SharedServer) -> httpx.Client:
    return httpx.Client(base_url=server.url, timeout=30)


def _end_active(server: SharedServer) -> None:
    with _http(server) as http:
        for s in http.get("/api/sessions", params={"status": "active"}).json()["sessions"]:
            http.post(f"/api/sessions/{s['id']}/complete")


@pytest.fixture(autouse=True)
def _tidy(module_server: SharedServer) -> Any:
    yield
    _end_active(module_server)


def test_search_highlights_and_opens_the_matching_message(
    open_page: OpenPage, module_server: SharedServer
) -> None:
    page = open_page(module_server.url)
    start_session(page)
    send(page, "first words")
    wait_turns(page, 1)
    send(page, "tell me about the narwhal")
    wait_turns(page, 2)
    page.goto(module_server.url + "/#/")
    page.fill("#session-search", "narwhal")
    hit = page.locator(".session-item .session-snippet mark").first
    expect(hit).to_have_text("narwhal")
    expect(page.locator(".session-item")).to_have_count(1)
    page.locator(".session-item .session-link").first.click()
    revealed = page.locator(".msg.revealed")
    expect(revealed).to_have_count(1)
    expect(revealed).to_contain_text("narwhal")
    page.fill("#session-search", "zzzznothing")
    expect(page.locator(".list-status")).to_have_text("No session matches this search.")


def test_archive_then_purge_through_the_dialog(
    open_page: OpenPage, module_server: SharedServer
) -> None:
    page = open_page(module_server.url)
    sid = start_session(page, title="Keep or purge")
    with _http(module_server) as http:
        assert http.post(f"/api/sessions/{sid}/complete").status_code == 200
    page.goto(module_server.url + "/#/")
    row = page.locator(f'.session-item[data-id="{sid}"]')
    row.get_by_role("button", name="Archive").click()
    expect(row).to_have_count(0)  # hidden by default
    page.check("#show-archived")
    expect(row.locator(".badge-archived")).to_have_text("archived")
    row.get_by_role("button", name="Purge…").click()
    dialog = page.locator("#purge-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("stored messages")
    expect(dialog).to_contain_text("checkpoints")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_have_count(0)
    expect(row).to_have_count(1)  # nothing happened
    row.get_by_role("button", name="Purge…").click()
    page.locator("#purge-confirm").click()
    expect(row).to_have_count(0)
    with _http(module_server) as http:
        assert http.get(f"/api/sessions/{sid}").status_code == 404


def test_prompts_queue_during_a_turn_and_can_be_removed(
    open_page: OpenPage, module_server: SharedServer
) -> None:
    page = open_page(module_server.url)
    start_session(page)
    send(page, "slow 40")
    box = page.locator("#prompt-input")
    expect(page.locator(".send-button")).to_have_text("Queue")
    expect(box).to_be_enabled()  # usable during the turn
    box.fill("queued one")
    box.press("Enter")
    box.fill("queued two")
    box.press("Enter")
    items = page.locator(".queue-item")
    expect(items).to_have_count(2)
    expect(items.first).to_contain_text("queued one")
    items.nth(1).get_by_role("button").click()  # remove "queued two"
    expect(items).to_have_count(1)
    page.get_by_role("button", name="Stop").click()  # the queued one starts after a cancel
    expect(items).to_have_count(0)
    wait_turns(page, 2)
    text = page.locator(".transcript").inner_text()
    assert "You said: queued one" in text and "queued two" not in text


def _git_commit(server: SharedServer) -> None:
    repo = server.workspace_root / "demo"
    for args in (
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=False, capture_output=True)


def _neighbour_key(page: Page, rows: Any, current: str) -> str:
    """Press j (or k on the last row) and check another session of the list opens (the
    list is ordered by activity, so which neighbour it is may change as sessions work).
    Its id."""
    expect(rows.nth(1)).to_be_attached()
    order = list(dict.fromkeys(rows.evaluate_all("rows => rows.map(r => r.dataset.id)")))
    at = order.index(current)
    page.keyboard.press("j" if at + 1 < len(order) else "k")
    expect(page).not_to_have_url(re.compile(rf"#/s/{current}$"))
    opened = page.url.rsplit("/", 1)[-1]
    assert opened in rows.evaluate_all("rows => rows.map(r => r.dataset.id)")
    return opened


def _leave_fields(page: Page) -> None:
    """Take the focus out of any field, so the next key is a shortcut. (A click on the
    body lands at its centre, which is on the prompt box or a sidebar field depending on
    how long the list is: the key was then typed there.)"""
    page.evaluate("() => document.activeElement?.blur()")
    assert page.evaluate("() => document.activeElement === document.body")


def _opened(page: Page, session_id: str) -> None:
    """The session's view had its first snapshot: an active one focuses its prompt box
    then, so leaving the box before that would type the next key into it."""
    expect(page.locator(f"#conversation-{session_id}")).to_contain_text("Session started")


def test_keyboard_shortcuts_and_their_overlay(
    open_page: OpenPage, module_server: SharedServer
) -> None:
    page = open_page(module_server.url)
    _git_commit(module_server)  # the changes button shows for a git repository with a commit
    first = start_session(page, title="Shortcut A")
    second = start_session(page, title="Shortcut B")
    _leave_fields(page)
    page.keyboard.press("?")
    overlay = page.locator("#shortcuts-dialog")
    expect(overlay).to_be_visible()
    expect(overlay).to_contain_text("Next session")
    page.keyboard.press("Escape")
    expect(overlay).to_have_count(0)
    _leave_fields(page)
    page.keyboard.press("/")
    expect(page.locator("#session-search")).to_be_focused()
    _leave_fields(page)
    page.keyboard.press("i")
    expect(page.locator("#prompt-input")).to_be_focused()
    rows = page.locator(".session-item")
    expect(rows.first).to_be_attached()
    order = rows.evaluate_all("rows => rows.map(r => r.dataset.id)")
    assert {first, second} <= set(order)
    page.goto(f"{module_server.url}/#/s/{second}")  # the session to step from, opened
    _opened(page, second)
    _leave_fields(page)
    assert _neighbour_key(page, rows, second) != second
    page.goto(f"{module_server.url}/#/s/{second}")
    _opened(page, second)
    _leave_fields(page)
    page.keyboard.press("c")
    review_tab = page.locator('.session-tab[data-tab="review"]')
    expect(review_tab).to_have_attribute("aria-selected", "true")
    _leave_fields(page)
    page.keyboard.press("n")
    expect(page.locator("#new-repo")).to_be_focused()


def test_new_session_form_offers_the_agents_modes(
    open_page: OpenPage, module_server: SharedServer
) -> None:
    page = open_page(module_server.url)
    start_session(page)  # the agent has started once: its controls are known
    page.reload()
    mode = page.locator("#new-mode")
    expect(mode).to_be_visible()
    values = mode.locator("option").evaluate_all("os => os.map(o => o.value)")
    chosen = next(v for v in values if v)
    mode.select_option(chosen)
    sid = start_session(page)
    with _http(module_server) as http:
        controls = http.get(f"/api/sessions/{sid}").json()["controls"]
    assert controls["modes"]["currentModeId"] == chosen
