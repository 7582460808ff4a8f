"""Client tools in a real browser against a real server and the demo agent: a pending
call shows as a card with the tool's name and input and is answered with JSON (the
agent reports the answer); a tool the page defines through
``window.agentSessions.clientTools`` joins the session's set and answers its calls by
itself."""

from __future__ import annotations

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
from tests.browser.ui import send, wait_turns  # noqa: E402
from tests.helpers import demo_command  # noqa: E402

pytestmark = pytest.mark.browser

OpenPage = Callable[..., Any]
SCHEMA = {
    "type": "object",
    "properties": {"colour": {"type": "string"}},
    "required": ["colour"],
}


def server_env(workspace_root: Path) -> dict[str, str]:
    # session/load, so that tools a page adds to a running session reach its agent on
    # its next start (the server stops an idle agent that can restore its session)
    state = workspace_root.parent / "demo-state"
    state.mkdir(exist_ok=True)
    command = demo_command(DEMO_AGENT_LOAD="1", DEMO_AGENT_STATE_DIR=str(state))
    return {"AGENT_COMMAND": command, "MAX_CONCURRENT_SESSIONS": "20"}


def new_session(server: SharedServer, **body: Any) -> str:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        repo_id = http.get("/api/repos").json()["repos"][0]["id"]
        response = http.post("/api/sessions", json={"repoId": repo_id, **body})
        assert response.status_code == 201, response.text
        return str(response.json()["id"])


def test_a_pending_call_is_answered_from_its_card(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    tools = [{"name": "pick", "description": "Pick a colour", "inputSchema": SCHEMA}]
    session_id = new_session(module_server, clientTools=tools)
    page = open_page(f"{module_server.url}/#/s/{session_id}")
    send(page, 'client-tool pick {"colour": "teal"}')
    card = page.locator(".client-tool-request")
    expect(card).to_have_count(1)
    expect(card.locator(".client-tool-name")).to_have_text("pick")
    expect(card.locator(".client-tool-input")).to_contain_text('"colour": "teal"')

    card.locator("textarea").fill("not json")
    card.get_by_role("button", name="Answer", exact=True).click()
    expect(card.locator(".error-text")).to_contain_text("not JSON")
    card.locator("textarea").fill('{"picked": "teal", "shade": "dark"}')
    card.get_by_role("button", name="Answer", exact=True).click()
    expect(page.locator(".client-tool-request")).to_have_count(0)
    expect(page.locator(".client-tool-note")).to_contain_text("Client tool pick: answered")
    wait_turns(page, 1)
    expect(page.locator(".transcript")).to_contain_text("pick answered")
    expect(page.locator(".transcript")).to_contain_text("dark")


def test_a_tool_the_page_defines_answers_its_calls(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    session_id = new_session(module_server)
    page = open_page(f"{module_server.url}/#/s/{session_id}")
    expect(page.locator("#prompt-input")).to_be_enabled()
    page.evaluate(
        """() => window.agentSessions.clientTools.define({
            name: "page_time",
            description: "The page's own answer",
            inputSchema: {type: "object", properties: {zone: {type: "string"}}},
            run: async (input) => ({zone: input.zone, from: "the page"}),
        })"""
    )
    assert page.evaluate("() => window.agentSessions.clientTools.list()") == ["page_time"]
    with httpx.Client(base_url=module_server.url, timeout=30) as http:
        url = f"/api/sessions/{session_id}/client-tools"
        for _ in range(300):  # the page's PUT runs in the page: poll what it stored
            if [t["name"] for t in http.get(url).json()["tools"]] == ["page_time"]:
                break
            page.wait_for_timeout(50)
        assert [t["name"] for t in http.get(url).json()["tools"]] == ["page_time"]
    send(page, 'client-tool page_time {"zone": "UTC"}')
    wait_turns(page, 1)
    expect(page.locator(".client-tool-note")).to_contain_text("Client tool page_time: answered")
    expect(page.locator(".transcript")).to_contain_text("page_time answered")
    expect(page.locator(".transcript")).to_contain_text("the page")
    expect(page.locator(".client-tool-request")).to_have_count(0)
