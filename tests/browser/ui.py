"""What a person does on the page, as small functions the browser tests share."""

from __future__ import annotations

import re
from typing import Any

import httpx
from playwright.sync_api import expect

WAIT_MS = 15_000
expect.set_options(timeout=WAIT_MS)

SESSION_URL = re.compile(r"#/s/[0-9a-f-]{36}$")


def api_session(url: str, repo: str = "demo") -> str:
    """A session on the repository named ``repo``, made through the API (not the page);
    its id."""
    repos = httpx.get(f"{url}/api/repos").json()["repos"]
    repo_id = next(r["id"] for r in repos if r["name"] == repo)
    made = httpx.post(f"{url}/api/sessions", json={"repoId": repo_id})
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


def start_session(page: Any, *, agent: str | None = None, title: str | None = None) -> str:
    """Start a session from the sidebar form; returns its id once the prompt box is usable."""
    expect(page.locator("#new-repo option").first).to_be_attached()
    if agent:
        page.select_option("#new-agent", agent)
    if title:
        page.fill("#new-title", title)
    before = page.url  # another session's, when one is open: wait for the new one's
    page.get_by_role("button", name="Start session").click()
    expect(page).to_have_url(SESSION_URL)
    if SESSION_URL.search(before):
        expect(page).not_to_have_url(before)
    expect(page.locator("#prompt-input")).to_be_enabled()
    return str(page.url.rsplit("/", 1)[1])


def send(page: Any, text: str) -> None:
    box = page.locator("#prompt-input")
    expect(box).to_be_enabled()
    box.fill(text)
    box.press("Enter")


def wait_turns(page: Any, count: int) -> None:
    """Wait until ``count`` turns have ended and the prompt box is usable again."""
    expect(page.locator(".run-marker")).to_have_count(count)
    expect(page.locator("#prompt-input")).to_be_enabled()


def transcript_text(page: Any) -> str:
    return str(page.locator(".transcript").inner_text())
