"""API.md "Users and access" in Chromium: an admin signs in and adds a member (the token
shown once), the member signs in on another browser and sees their own and the team's
sessions with their owners (not someone else's private one), works in a session of their
own, and while that page is open the admin revokes the member's token: the member's page
is signed out at once (its WebSocket closed 4401) and asks for a token again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from playwright.sync_api import expect

from tests.browser.ui import send, start_session, wait_turns
from tests.conftest import LiveServer

ADMIN = "browser-admin-token-0123456789"


def sign_in(page: Any, token: str) -> None:
    dialog = page.get_by_role("dialog", name="Sign in")
    expect(dialog).to_be_visible()
    dialog.get_by_label("Token").fill(token)
    dialog.get_by_role("button", name="Sign in").click()
    expect(dialog).to_be_hidden()


def test_sign_in_a_members_view_and_revoking_while_their_page_is_open(
    live_server: Callable[..., LiveServer], open_page: Callable[..., Any]
) -> None:
    server = live_server(API_TOKEN=ADMIN)
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN}"}) as api:
        otto = api.post("/api/users", json={"name": "otto", "role": "member"}).json()["token"]
        repo = api.get("/api/repos").json()["repos"][0]["id"]
        as_otto = {"Authorization": f"Bearer {otto}"}
        for title, visibility in (("otto team work", "team"), ("otto secret", "private")):
            made = api.post(
                "/api/sessions",
                json={"repoId": repo, "title": title, "visibility": visibility},
                headers=as_otto,
            )
            assert made.status_code == 201, made.text

    # The admin signs in and adds a member on the Users page: the token is shown once.
    admin = open_page(f"{server.url}/#/users")
    sign_in(admin, ADMIN)
    expect(admin.get_by_role("link", name="Users")).to_be_visible()
    admin.get_by_role("heading", name="Users").wait_for()
    admin.get_by_label("Name").fill("maria")
    admin.get_by_role("button", name="Add user").click()
    shown = admin.locator(".token-once")
    expect(shown).to_be_visible()
    token = shown.input_value()
    assert token.startswith("as_")
    expect(admin.locator(".user-item", has_text="maria")).to_be_visible()

    # The member signs in on their own browser: who they are, whose sessions are whose.
    member = open_page(server.url)
    sign_in(member, token)
    expect(member.locator("#whoami")).to_contain_text("maria")
    expect(member.locator("#whoami")).to_contain_text("member")
    expect(member.get_by_role("link", name="Users")).to_be_hidden()
    team = member.locator(".session-item", has_text="otto team work")
    expect(team).to_be_visible()
    expect(team.locator(".session-owner")).to_have_text("otto")
    expect(member.locator(".session-item", has_text="otto secret")).to_have_count(0)
    start_session(member)
    send(member, "hello from maria")
    wait_turns(member, 1)
    expect(member.locator(".msg-user .who").last).to_have_text("maria (you)")
    expect(member.locator(".session-meta .session-owner")).to_contain_text("maria (you)")
    member.select_option("#filter-owner", "me")
    expect(member.locator(".session-item")).to_have_count(1)
    expect(member.locator(".session-item .session-owner")).to_have_text("maria (you)")

    # The admin revokes maria's token while her session page is open: signed out at once.
    admin.reload()
    sign_in_needed = admin.get_by_role("dialog", name="Sign in")
    expect(sign_in_needed).to_be_hidden()
    row = admin.locator(".user-item", has_text="maria").locator(".token-row").first
    row.get_by_role("button", name="Revoke").click()
    expect(admin.locator(".user-item", has_text="maria").locator(".token-row")).to_have_count(0)
    expect(member.get_by_role("dialog", name="Sign in")).to_be_visible(timeout=3000)
    assert (
        httpx.get(f"{server.url}/api/me", headers={"Authorization": f"Bearer {token}"}).status_code
        == 401
    )
