"""The sessions page in a real browser: registering repositories, the list with its
filters and paging, start failures and the session limit explained, the access token,
and the Markdown renderer's safety."""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip(
    "playwright.sync_api",
    reason="playwright is not installed (run scripts/install-browser)",
    exc_type=ImportError,
)

from playwright.sync_api import expect  # noqa: E402

from tests.browser.conftest import SharedServer  # noqa: E402
from tests.browser.ui import send, start_session, wait_turns  # noqa: E402
from tests.conftest import LiveServer, make_git_repo  # noqa: E402

pytestmark = pytest.mark.browser

OpenPage = Callable[..., Any]
Shot = Callable[..., Path]
DEMO_AGENT = f"{shlex.quote(sys.executable)} -m agent_bridge.demo_agent"
LIMIT = 3


def server_env(workspace_root: Path) -> dict[str, str]:
    make_git_repo(workspace_root / "webshop", {"README.md": "# Webshop\n"})
    (workspace_root / "notes").mkdir()
    agents = workspace_root.parent / "agents.toml"
    agents.write_text(
        f'[agents.broken]\ncommand = "{DEMO_AGENT}"\nenv = {{DEMO_AGENT_MODE = "fail-start"}}\n'
    )
    return {"MAX_CONCURRENT_SESSIONS": str(LIMIT), "AGENTS_FILE": str(agents)}


class Api:
    """Setting the scene through the HTTP API (what the page does is tested by the page)."""

    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=url, timeout=30)

    def repo_id(self, name: str) -> str:
        return next(
            r["id"] for r in self.http.get("/api/repos").json()["repos"] if r["name"] == name
        )

    def create(self, repo: str, title: str) -> str:
        response = self.http.post(
            "/api/sessions", json={"repoId": self.repo_id(repo), "title": title}
        )
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    def complete(self, session_id: str) -> None:
        assert self.http.post(f"/api/sessions/{session_id}/complete").status_code == 200

    def end_active(self) -> None:
        for session in self.http.get("/api/sessions", params={"status": "active"}).json()[
            "sessions"
        ]:
            self.complete(session["id"])


@pytest.fixture
def api(module_server: SharedServer) -> Any:
    client = Api(module_server.url)
    yield client
    client.end_active()
    client.http.close()


def test_register_repository_by_path_explains_errors(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    page = open_page(module_server.url)
    page.get_by_text("Register a repository").click()
    path = page.get_by_label("Directory inside the workspace root")
    error = page.locator(".repo-form .form-error")
    for typed, words in [
        ("no-such-dir", "The path does not exist."),
        ("../..", "outside the workspace root"),
        ("demo", "already registered"),
    ]:
        path.fill(typed)
        path.press("Enter")
        expect(error).to_contain_text(words)
    path.fill("notes")
    page.get_by_role("button", name="Register").click()
    expect(page.locator(".repo-form .form-ok")).to_contain_text(
        "Registered “notes” (not a git repository)"
    )
    expect(error).to_be_hidden()
    expect(page.locator("#new-repo option:checked")).to_have_text("notes")


def test_start_failure_and_session_limit_are_explained(
    module_server: SharedServer, open_page: OpenPage, api: Api, shot: Shot
) -> None:
    page = open_page(module_server.url)
    expect(page.locator("#new-agent option")).to_have_count(2)
    page.select_option("#new-agent", "broken")
    page.get_by_role("button", name="Start session").click()
    error = page.locator(".new-session .form-error")
    expect(error).to_contain_text("The agent did not start.")
    expect(error).to_contain_text("exit code 2")
    expect(error.locator("pre.stderr")).to_contain_text("demo agent: cannot start (fail-start)")
    expect(page).not_to_have_url(re.compile("#/s/"))
    expect(page.locator(".session-item[data-status=error]")).to_have_count(1)

    api.end_active()
    for n in range(LIMIT):
        api.create("demo", f"filler {n + 1}")
    page.select_option("#new-agent", "default")
    page.get_by_role("button", name="Start session").click()
    expect(error).to_contain_text("Too many sessions are running.")
    expect(error).to_contain_text(f"limit of {LIMIT} active sessions")
    expect(error).to_contain_text(re.compile(r"You can try again in \d+ s"))
    shot(page, "session-limit")


def test_sessions_list_filters_by_repository_and_status_and_pages(
    module_server: SharedServer, open_page: OpenPage, api: Api, shot: Shot
) -> None:
    api.end_active()
    ids = [api.create("webshop", f"Webshop task {n}") for n in range(1, 4)]
    api.complete(ids[0])
    api.complete(ids[1])
    api.http.delete(f"/api/sessions/{ids[2]}")
    live = api.create("webshop", "Webshop task 4")

    page = open_page(f"{module_server.url}/?pageSize=2")
    items = page.locator(".session-item")
    expect(items.first).to_be_visible()
    page.select_option("#filter-repo", label="webshop")
    expect(items).to_have_count(2)
    expect(items.first).to_contain_text("Webshop task 4")  # newest first
    expect(items.first).to_contain_text("active")
    expect(items.first).to_contain_text("webshop")
    expect(items.first).to_contain_text("default")
    expect(items.first).to_contain_text("just now")
    page.get_by_role("button", name="Load more").click()
    expect(items).to_have_count(4)
    expect(page.get_by_role("button", name="Load more")).to_be_hidden()

    page.select_option("#filter-status", "completed")
    expect(items).to_have_count(2)
    expect(items.filter(has_text="completed")).to_have_count(2)
    page.select_option("#filter-status", "cancelled")
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("Webshop task 3")

    page.select_option("#filter-status", "")
    page.select_option("#filter-repo", "")
    page.goto(f"{module_server.url}/#/s/{live}")
    expect(page.locator("#prompt-input")).to_be_enabled()
    page.goto(f"{module_server.url}/")
    expect(items.first).to_be_visible()
    shot(page, "sessions-list")
    page.locator(".session-link", has_text="Webshop task 4").click()
    expect(page.locator(".session-title")).to_have_text("Webshop task 4")


def test_markdown_renderer_escapes_agent_text(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    page = open_page(module_server.url)
    found = page.evaluate("""async () => {
        const { renderMarkdown } = await import("/markdown.js");
        const box = document.createElement("div");
        box.innerHTML = renderMarkdown([
            "<script>window.owned = 1</script> <img src=x onerror='window.owned = 2'>",
            "[click](javascript:window.owned=3) [docs](https://example.org/a?b=1&c=2)",
            '[x](https://e.org/"onmouseover="window.owned=4) **bold** *it* `<b>code</b>`',
            "```html", "<iframe src=//evil></iframe>", "```", "- one", "- two",
        ].join("\\n"));
        return {
            dangerous: box.querySelectorAll("script, img, iframe, [onerror], [onmouseover]").length,
            hrefs: [...box.querySelectorAll("a")].map((a) => a.getAttribute("href")),
            strong: box.querySelector("strong")?.textContent,
            code: box.querySelector("p code")?.textContent,
            block: box.querySelector("pre code")?.textContent,
            items: box.querySelectorAll("li").length,
            owned: window.owned ?? null,
        };
    }""")
    assert found == {
        "dangerous": 0,
        "hrefs": ["https://example.org/a?b=1&c=2", "https://e.org/"],
        "strong": "bold",
        "code": "<b>code</b>",
        "block": "<iframe src=//evil></iframe>",
        "items": 2,
        "owned": None,
    }


def test_api_token_signs_the_browser_in_once(
    live_server: Callable[..., LiveServer], open_page: OpenPage
) -> None:
    server = live_server(API_TOKEN="s3cret-token")  # noqa: S106 - a test token
    page = open_page(server.url)
    dialog = page.get_by_role("dialog", name="Sign in")
    expect(dialog).to_be_visible()
    dialog.get_by_label("Token").fill("wrong")
    dialog.get_by_role("button", name="Sign in").click()
    expect(dialog.locator(".token-error")).to_be_visible()
    dialog.get_by_label("Token").fill("s3cret-token")
    dialog.get_by_role("button", name="Sign in").click()
    expect(dialog).to_be_hidden()

    start_session(page)
    send(page, "hello with a token")
    wait_turns(page, 1)
    expect(page.locator(".msg-agent").last).to_contain_text("You said: hello with a token")
    page.reload()
    wait_turns(page, 1)
    expect(dialog).to_be_hidden()
    # The browser keeps a sign-in (an HttpOnly cookie its scripts cannot read), never the token.
    assert page.evaluate("sessionStorage.getItem('agent-sessions.token')") is None
    assert "s3cret-token" not in page.evaluate("document.cookie")
    [cookie] = page.context.cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and "s3cret" not in cookie["value"]
