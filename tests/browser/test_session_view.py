"""The session view in a real browser against a real server and the demo agent: the
streamed reply, permissions across two tabs, cancel, reload and server restart mid-turn,
run history."""

from __future__ import annotations

import re
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
from tests.browser.ui import send, start_session, transcript_text, wait_turns  # noqa: E402
from tests.conftest import LiveServer, start_server  # noqa: E402

pytestmark = pytest.mark.browser


def server_env(workspace_root: Path) -> dict[str, str]:
    # shared by this module's tests: room for their sessions, and a step limit that the
    # write turn (2 tool calls) stays under and `tools 5` reaches
    return {"MAX_CONCURRENT_SESSIONS": "50", "AGENT_MAX_STEPS": "3"}


OpenPage = Callable[..., Any]
Shot = Callable[..., Path]


def test_reply_streams_with_markdown_thoughts_plan_tools_and_usage(
    module_server: SharedServer, open_page: OpenPage, shot: Shot
) -> None:
    page = open_page(module_server.url)
    start_session(page, title="Tour of the demo repository")
    box = page.locator("#prompt-input")

    send(page, "slow 12")
    expect(box).to_have_attribute("placeholder", re.compile("queue"))  # usable: it queues
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    streaming = page.locator(".msg-agent.streaming")
    expect(streaming).to_contain_text("chunk 4/12")
    shot(page, "session-streaming")
    wait_turns(page, 1)
    expect(page.locator(".msg-agent").last).to_contain_text("Streamed 12 chunks. Done.")
    expect(page.locator(".msg-agent.streaming")).to_have_count(0)

    send(page, "Explain **this** repo, then `ls`")
    wait_turns(page, 2)
    reply = page.locator(".msg-agent").last
    expect(reply.locator("strong")).to_have_text("this")
    expect(reply.locator("code")).to_have_text("ls")
    thought = page.locator("details.thought").last
    expect(thought).to_contain_text("Thought")
    assert thought.get_attribute("open") is None  # folded
    plan = page.locator(".plan").last
    expect(plan.locator(".step")).to_have_count(2)
    expect(plan.locator(".step-completed")).to_have_count(2)
    tool = page.locator(".tool.card").last
    expect(tool).to_contain_text("Read README.md")
    expect(tool.locator(".badge")).to_have_text("done")
    tool.locator("summary").click()
    expect(tool.locator(".tool-body")).to_contain_text("Arguments")
    expect(tool.locator(".tool-body")).to_contain_text("README.md")
    expect(page.locator(".session-usage")).to_contain_text("tokens")
    expect(page.locator(".session-usage")).to_contain_text("cost $")

    box.fill("line one")
    box.press("Shift+Enter")
    box.type("line two")
    assert box.input_value() == "line one\nline two"
    box.press("Enter")
    wait_turns(page, 3)
    assert page.locator(".msg-user .msg-body").last.text_content() == "line one\nline two"
    shot(page, "session-view")

    dark = open_page(page.url, color_scheme="dark")
    wait_turns(dark, 3)
    dark.locator(".tool.card summary").first.click()
    shot(dark, "session-dark")
    phone = open_page(
        page.url, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )
    wait_turns(phone, 3)
    shot(phone, "phone-session")
    phone.get_by_role("link", name="Sessions", exact=True).click()
    expect(phone.locator(".session-item").first).to_be_visible()
    shot(phone, "phone-sessions")


def test_permission_is_answered_in_one_tab_and_disappears_in_both(
    module_server: SharedServer, open_page: OpenPage, shot: Shot
) -> None:
    first = open_page(module_server.url)
    start_session(first, title="Add a greeting file")
    second = open_page(first.url)
    expect(second.locator("#prompt-input")).to_be_enabled()

    send(first, "write notes/hello.txt Hello from the browser")
    for page in (first, second):
        question = page.locator(".permission-request")
        expect(question).to_have_count(1)
        expect(question).to_contain_text("Write notes/hello.txt")
        expect(question.get_by_role("button")).to_have_text(["Allow", "Always allow", "Reject"])
    expect(first.locator(".tool.awaiting")).to_have_count(1)
    shot(first, "permission-request", readme=True)

    second.get_by_role("button", name="Allow", exact=True).click()
    for page in (first, second):
        expect(page.locator(".permission-request")).to_have_count(0)
        expect(page.locator(".permission-note")).to_have_count(1)
        expect(page.locator(".permission-note")).to_contain_text("Allow")
        wait_turns(page, 1)
    assert (
        module_server.workspace_root / "demo" / "notes" / "hello.txt"
    ).read_text() == "Hello from the browser"

    edit = first.locator(".tool.card", has_text="Write notes/hello.txt")
    expect(edit.locator(".badge")).to_have_text("done")
    expect(edit.locator(".diff .line.add")).to_have_text("+added: Hello from the browser")
    shot(first, "session-after-permission")
    assert transcript_text(first) == transcript_text(second)


def test_stop_button_and_escape_cancel_the_turn(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    page = open_page(module_server.url)
    start_session(page)

    send(page, "slow 100")
    expect(page.locator(".msg-agent.streaming")).to_contain_text("chunk 2/100")
    page.get_by_role("button", name="Stop").click()
    expect(page.locator(".run-marker.run-cancelled")).to_have_count(1)
    expect(page.locator("#prompt-input")).to_be_enabled()
    expect(page.get_by_role("button", name="Stop")).to_be_hidden()

    send(page, "slow 100")
    expect(page.locator(".msg-agent.streaming")).to_contain_text("chunk 2/100")
    page.keyboard.press("Escape")
    expect(page.locator(".run-marker.run-cancelled")).to_have_count(2)
    expect(page.locator("#prompt-input")).to_be_enabled()
    assert "chunk 100/100" not in transcript_text(page)

    page.get_by_role("button", name="Complete").click()
    expect(page.locator(".session-head .badge")).to_have_text("completed")
    expect(page.locator(".status-note.status-completed")).to_contain_text("Session completed")
    expect(page.locator("#prompt-input")).to_be_disabled()
    expect(page.get_by_role("button", name="Delete")).to_be_hidden()


def test_reload_mid_turn_shows_every_message_once(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    page = open_page(module_server.url)
    start_session(page)
    send(page, "slow 20")
    expect(page.locator(".msg-agent.streaming")).to_contain_text("chunk 3/20")
    page.reload()
    expect(page.get_by_role("button", name="Stop")).to_be_visible()  # the turn still runs
    wait_turns(page, 1)
    text = transcript_text(page)
    for index in range(1, 21):
        assert len(re.findall(rf"chunk {index}/20(?!\d)", text)) == 1, text
    expect(page.locator(".msg-user")).to_have_count(1)
    expect(page.locator(".msg-agent")).to_have_count(2)
    expect(page.locator(".plan")).to_have_count(1)

    page.get_by_role("button", name="Delete").click()  # the confirm dialog is accepted
    expect(page.locator(".session-head .badge")).to_have_text("cancelled")
    expect(page.locator(".status-note.status-cancelled")).to_contain_text("user request")
    expect(page.locator("#prompt-input")).to_be_disabled()


def test_server_restart_mid_turn_reconnects_without_duplicates(
    server: LiveServer, open_page: OpenPage, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    page = open_page(server.url)
    start_session(page)
    send(page, "slow 100")
    expect(page.locator(".msg-agent.streaming")).to_contain_text("chunk 3/100")

    server.stop()
    again = start_server(server.env, tmp_path / "server-restarted.log", port=server.port)
    request.addfinalizer(again.stop)

    expect(page.locator(".run-marker.run-interrupted")).to_have_count(1)
    expect(page.locator("#prompt-input")).to_be_enabled()
    text = transcript_text(page)
    assert text.count("chunk 2/100 ") == 1, text
    send(page, "hello after the restart")
    wait_turns(page, 2)
    expect(page.locator(".msg-agent").last).to_contain_text("hello after the restart")
    expect(page.locator(".msg-user")).to_have_count(2)
    expect(page.locator(".run-marker")).to_have_count(2)
    assert page.locator(".msg-agent").first.inner_text().count("chunk 2/100 ") == 1


def test_run_history_shows_steps_and_tool_calls_and_resumes_a_paused_run(
    module_server: SharedServer, open_page: OpenPage, shot: Shot
) -> None:
    page = open_page(module_server.url)
    session_id = start_session(page)
    send(page, "tools 5")
    expect(page.locator(".run-marker.run-paused")).to_have_count(1)
    expect(page.locator("#prompt-input")).to_be_enabled()
    with httpx.Client(base_url=module_server.url) as http:
        run = http.get("/api/agent-runs", params={"sessionId": session_id}).json()["data"][0]
        calls = http.get(f"/api/agent-runs/{run['id']}/tool-calls").json()["data"]
    assert run["status"] == "paused" and run["maxSteps"] == 3, run

    page.get_by_role("button", name="Runs").click()
    runs = page.locator(".runs-panel .run")
    expect(runs).to_have_count(1)
    expect(runs.first).to_contain_text("paused")
    expect(runs.first).to_contain_text(f"{run['stepCount']} steps / 3")
    runs.first.locator(".run-toggle").click()
    rows = runs.first.locator("table.calls tbody tr")
    expect(rows).to_have_count(len(calls))
    expect(rows.first).to_contain_text("Tool 1")
    expect(rows.first).to_contain_text(re.compile(r"\d+ ms"))
    shot(page, "run-history")

    runs.first.get_by_role("button", name="Resume run").click()
    expect(runs).to_have_count(2)
    wait_turns(page, 2)
    expect(page.locator(".runs-panel .run").first).to_contain_text(
        f"resumed from run {run['id'][:8]}"
    )


def test_rewind_and_fork_from_a_message(module_server: SharedServer, open_page: OpenPage) -> None:
    nil = "00000000-0000-0000-0000-000000000000"
    with httpx.Client(base_url=module_server.url) as http:
        for action in ("fork", "rewind"):
            probe = http.post(f"/api/sessions/{nil}/{action}", json={})
            if probe.status_code in (404, 405) and probe.json()["error"]["code"] in (
                "not_found",
                "method_not_allowed",
            ):
                pytest.skip(f"the server has no {action} route yet (the page hides the button)")
    page = open_page(module_server.url)
    session_id = start_session(page)
    send(page, "first question")
    wait_turns(page, 1)
    send(page, "second question")
    wait_turns(page, 2)

    first_reply = page.locator(".msg-agent").first
    expect(first_reply).to_contain_text("You said: first question")
    first_reply.get_by_role("button", name="Rewind to here").click()
    expect(page.locator(".msg-user")).to_have_count(1)
    expect(page.locator(".msg-agent")).to_have_count(1)
    expect(page.locator("#prompt-input")).to_be_enabled()
    assert "second question" not in transcript_text(page)

    page.locator(".msg-agent").first.get_by_role("button", name="Fork from here").click()
    expect(page).not_to_have_url(re.compile(session_id))
    expect(page.locator(".session-meta")).to_contain_text("forked at #")
    expect(page.locator(".msg-user")).to_have_count(1)
    expect(page.locator(".msg-user .msg-body")).to_have_text("first question")
    send(page, "history")
    expect(page.locator(".msg-agent").last).to_contain_text("first question")
