"""Agent controls in a real browser against a real server and the demo agent: the mode and
model pickers, the `/` command list, the `@` file picker, images attached and shown in the
transcript, and the agent's questions (elicitation forms)."""

from __future__ import annotations

import base64
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

pytestmark = pytest.mark.browser

OpenPage = Callable[..., Any]
DEMO_AGENT = f"{shlex.quote(sys.executable)} -m agent_bridge.demo_agent"
# a 1×1 red PNG
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def server_env(workspace_root: Path) -> dict[str, str]:
    demo = workspace_root / "demo"
    (demo / "src").mkdir()
    (demo / "src" / "widget_factory.py").write_text("print('widgets')\n")
    agents = workspace_root.parent / "agents.toml"
    agents.write_text(
        f'[agents.plain]\ncommand = "{DEMO_AGENT}"\nenv = {{DEMO_AGENT_MODE = "no-controls"}}\n'
    )
    return {"MAX_CONCURRENT_SESSIONS": "20", "AGENTS_FILE": str(agents)}


def test_mode_switch_changes_the_answer_and_model_is_picked(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    page = open_page(module_server.url)
    session_id = start_session(page)
    mode = page.get_by_label("Mode", exact=True)
    model = page.get_by_label("Model", exact=True)
    expect(mode).to_be_enabled()
    expect(mode).to_have_value("code")
    expect(model).to_have_value("demo-small")

    send(page, "hello")
    wait_turns(page, 1)
    expect(page.locator(".msg-agent").last).not_to_contain_text("[ask mode]")

    # each change is confirmed (announced) once the server has it, before the next one
    announcer = page.locator("#announcer")
    mode.focus()
    mode.select_option("ask")
    expect(announcer).to_have_text("Mode ask chosen")
    model.select_option("demo-large")
    expect(announcer).to_have_text(re.compile(r"demo-large chosen$"))
    expect(mode).to_have_value("ask")
    expect(model).to_have_value("demo-large")
    # the server's state, not just the page's: the controls the agent now reports
    controls = httpx.get(f"{module_server.url}/api/sessions/{session_id}/controls").json()
    assert controls["modes"]["currentModeId"] == "ask"
    assert {o["id"]: o["currentValue"] for o in controls["config"]}["model"] == "demo-large"

    send(page, "hello")
    wait_turns(page, 2)
    expect(page.locator(".msg-agent").last).to_contain_text("[ask mode]")
    box = page.locator("#prompt-input")
    box.fill("/help")
    expect(page.get_by_role("listbox").get_by_role("option").first).to_contain_text("/help")
    box.press("Enter")  # takes the command from the list first
    expect(box).to_have_value("/help ")
    box.press("Enter")
    wait_turns(page, 3)
    expect(page.locator(".msg-agent").last).to_contain_text("mode ask, model demo-large")


def test_controls_change_live_in_a_second_tab(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    page = open_page(module_server.url)
    session_id = start_session(page)
    other = open_page(f"{module_server.url}/#/s/{session_id}")
    expect(other.get_by_label("Mode", exact=True)).to_have_value("code")
    response = httpx.put(
        f"{module_server.url}/api/sessions/{session_id}/mode", json={"modeId": "ask"}
    )
    assert response.status_code == 200
    expect(page.get_by_label("Mode", exact=True)).to_have_value("ask")
    expect(other.get_by_label("Mode", exact=True)).to_have_value("ask")


def test_pickers_disabled_with_a_reason_when_the_agent_offers_none(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    page = open_page(module_server.url)
    start_session(page, agent="plain")
    mode = page.get_by_label("Mode", exact=True)
    expect(mode).to_be_disabled()
    expect(mode).to_have_accessible_description("This agent offers no modes")
    expect(page.get_by_label("Model", exact=True)).to_be_disabled()


def test_pickers_disabled_once_the_session_ended(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    page = open_page(module_server.url)
    start_session(page)
    mode = page.get_by_label("Mode", exact=True)
    expect(mode).to_be_enabled()
    page.get_by_role("button", name="Complete").click()
    expect(mode).to_be_disabled()
    expect(mode).to_have_accessible_description("The session has ended")
    expect(page.get_by_label("Model", exact=True)).to_be_disabled()
    expect(page.get_by_role("button", name="Attach image")).to_be_disabled()


def test_slash_opens_the_command_list(module_server: SharedServer, open_page: OpenPage) -> None:
    page = open_page(module_server.url)
    start_session(page)
    box = page.locator("#prompt-input")
    box.press("/")
    listbox = page.get_by_role("listbox")
    expect(listbox).to_be_visible()
    options = listbox.get_by_role("option")
    expect(options).to_have_count(2)
    expect(options.first).to_contain_text("/help")
    expect(options.first).to_contain_text("What this agent can do")
    expect(options.nth(1)).to_contain_text("glob")  # the input hint of /files
    box.press("Escape")
    expect(listbox).to_be_hidden()
    expect(box).to_have_value("/")

    box.press("f")  # typing reopens it, filtered
    expect(options).to_have_count(1)
    expect(options.first).to_contain_text("/files")
    box.press("ArrowDown")
    box.press("Enter")
    expect(box).to_have_value("/files ")
    expect(listbox).to_be_hidden()
    box.press("Enter")
    wait_turns(page, 1)
    expect(page.locator(".msg-agent").last).to_contain_text("Files:")


def test_at_opens_the_file_picker_and_sends_a_file_block(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    page = open_page(module_server.url)
    session_id = start_session(page)
    probe = httpx.get(f"{module_server.url}/api/sessions/{session_id}/files?query=x")
    if probe.status_code == 404:
        pytest.skip("GET /api/sessions/{id}/files is not on this branch yet (server side)")
    box = page.locator("#prompt-input")
    box.type("look at @wfac")
    options = page.get_by_role("listbox").get_by_role("option")
    expect(options.first).to_have_text("src/widget_factory.py")
    box.press("Enter")
    expect(box).to_have_value("look at @src/widget_factory.py ")
    box.press("Enter")
    wait_turns(page, 1)
    expect(page.locator(".msg-user").last.locator(".attachment-file")).to_have_text(
        "@src/widget_factory.py"
    )
    expect(page.locator(".msg-agent").last).to_contain_text("widget_factory.py")


def test_image_attached_shows_a_thumbnail_then_in_the_transcript(
    module_server: SharedServer, open_page: OpenPage, tmp_path: Path
) -> None:
    page = open_page(module_server.url)
    start_session(page)
    image = tmp_path / "dot.png"
    image.write_bytes(PNG)
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Attach image").click()
    chooser.value.set_files(str(image))
    thumbs = page.get_by_role("list", name="Images to send").locator("img")
    expect(thumbs).to_have_count(1)
    # removable before sending
    page.get_by_role("button", name="Remove dot.png").click()
    expect(thumbs).to_have_count(0)
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Attach image").click()
    chooser.value.set_files(str(image))
    expect(thumbs).to_have_count(1)

    send(page, "what is in this picture?")
    wait_turns(page, 1)
    expect(thumbs).to_have_count(0)
    shown = page.locator(".msg-user").last.locator(".msg-attachments img")
    expect(shown).to_have_count(1)
    url = re.compile(r"/api/sessions/[0-9a-f-]+/attachments/[0-9a-f]{64}$")
    expect(shown).to_have_attribute("src", url)
    # the browser loaded it from the attachments URL
    loaded = "img => img.complete && img.naturalWidth === 1"
    page.wait_for_function(loaded, arg=shown.element_handle())
    expect(page.locator(".msg-agent").last).to_contain_text("[image image/png")


def test_image_pasted_or_dropped_into_the_prompt_box(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    page = open_page(module_server.url)
    start_session(page)
    page.locator("#prompt-input").focus()
    thumbs = page.get_by_role("list", name="Images to send").locator("img")
    for event in ("paste", "drop"):
        page.evaluate(
            """([b64, event]) => {
              const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
              const data = new DataTransfer();
              data.items.add(new File([bytes], `${event}.png`, { type: "image/png" }));
              const box = document.getElementById("prompt-input");
              const init = { bubbles: true, cancelable: true };
              box.dispatchEvent(event === "paste"
                ? new ClipboardEvent("paste", { ...init, clipboardData: data })
                : new DragEvent("drop", { ...init, dataTransfer: data }));
            }""",
            [base64.b64encode(PNG).decode(), event],
        )
    expect(thumbs).to_have_count(2)
    expect(thumbs.nth(0)).to_have_attribute("alt", "paste.png")
    expect(thumbs.nth(1)).to_have_attribute("alt", "drop.png")


def test_elicitation_form_is_answered(module_server: SharedServer, open_page: OpenPage) -> None:
    """The demo agent's ``save`` asks a form before writing: it is rendered from the
    schema, checked in the page, answered with the keyboard, and the file is written
    under the chosen name; a URL elicitation shows its link and is answered Done."""
    page = open_page(module_server.url)
    start_session(page)
    demo = module_server.workspace_root / "demo"
    send(page, "save draft.txt from the form")
    card = page.locator(".elicitation-request")
    expect(card).to_have_count(1)
    expect(card).to_contain_text("Save draft.txt? Choose the file name.")
    name = card.get_by_label("File name")
    expect(name).to_have_value("draft.txt")  # the schema's default
    name.focus()
    name.fill("")
    name.press("Enter")  # required: the browser refuses to submit, nothing is sent
    assert name.evaluate("input => input.validity.valueMissing") is True
    expect(card).to_have_count(1)
    assert not (demo / "draft.txt").exists()
    name.fill("chosen.txt")
    name.press("Tab")
    overwrite = card.get_by_label("Replace the file if it exists")
    expect(overwrite).to_be_focused()
    overwrite.press("Space")
    expect(overwrite).to_be_checked()
    overwrite.press("Enter")  # submits the form
    expect(card).to_have_count(0)
    expect(page.locator(".elicitation-note")).to_contain_text("answered")
    wait_turns(page, 1)
    assert (demo / "chosen.txt").read_text() == "from the form"
    assert not (demo / "draft.txt").exists()

    send(page, "save declined.txt nothing")
    expect(card).to_have_count(1)
    card.get_by_role("button", name="Decline").click()
    expect(card).to_have_count(0)
    expect(page.locator(".elicitation-note").last).to_contain_text("declined")
    wait_turns(page, 2)
    expect(page.locator(".msg-agent").last).to_contain_text("declined by user")
    assert not (demo / "declined.txt").exists()

    send(page, "elicit url https://example.test/sign-in")
    expect(card).to_have_count(1)
    link = card.get_by_role("link", name="Open https://example.test/sign-in")
    expect(link).to_have_attribute("href", "https://example.test/sign-in")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    card.get_by_role("button", name="Done").click()
    wait_turns(page, 3)
    expect(page.locator(".msg-agent").last).to_contain_text(
        'Elicitation answer: {"action": "accept"}'
    )
