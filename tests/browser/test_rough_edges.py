"""The rough edges issue 28 found beside the review, in Chromium: the Usage page (an
empty chart says so, "failed" keeps its own colour, tools grouped, filters on a phone),
a run's timeline opened wide (and no model time for a run without tools), the Errors
page's highlight left behind, the elicitation form's checkbox and number input, and the
phone's header and prompt box. Screenshots go to docs/ (edges-*.png)."""

from __future__ import annotations

import json
import shutil
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
from tests.browser.ui import api_session, send, start_session, wait_turns  # noqa: E402
from tests.conftest import ROOT  # noqa: E402

pytestmark = pytest.mark.browser
OpenPage = Callable[..., Any]
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}


def server_env(workspace_root: Path) -> dict[str, str]:
    return {"MAX_CONCURRENT_SESSIONS": "20"}


def docs_shot(page: Any, name: str) -> None:
    path = ROOT / "test-output" / "screenshots" / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path))
    shutil.copyfile(path, ROOT / "docs" / f"{name}.png")


def test_usage_page_without_data_and_on_a_phone(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    page = open_page(f"{module_server.url}/#/usage", **PHONE)
    for card in ("usage-cost", "usage-tokens", "usage-status", "usage-slow", "usage-failing"):
        expect(page.locator(f"#{card} .chart-empty")).to_have_text("No data in this range.")
        expect(page.locator(f"#{card} svg")).to_have_count(0)  # no 0–1–1 axis
    # the filters fit the phone's width, each select beside its label
    width = page.evaluate("() => document.documentElement.clientWidth")
    for select in ("#usage-range", "#usage-repo", "#usage-agent"):
        box = page.locator(select).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, (select, box)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    docs_shot(page, "edges-usage-phone")


def test_failed_runs_have_a_colour_of_their_own(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    sid = api_session(module_server.url)
    for text in ("hello", "crash"):
        run = httpx.post(f"{module_server.url}/api/sessions/{sid}/prompt", json={"text": text})
        assert run.status_code == 202, run.text
        ended = run.json()["runId"]
        page = open_page(f"{module_server.url}/#/s/{sid}")
        expect(page.locator(f".run-marker[data-run-id='{ended}']")).to_be_visible()
        page.close()
    page = open_page(f"{module_server.url}/#/usage")
    completed = page.locator("#usage-status rect[data-series='completed']").first
    failed = page.locator("#usage-status rect[data-series='failed']").first
    expect(failed).to_be_visible()
    fill = "(el) => getComputedStyle(el).fill"
    assert completed.evaluate(fill) == "rgb(0, 114, 178)"  # Okabe-Ito blue
    assert failed.evaluate(fill) == "rgb(213, 94, 0)"  # Okabe-Ito vermillion
    legend = page.locator("#usage-status .chart-legend li").filter(has_text="failed")
    expect(legend.locator(".swatch")).to_have_class("swatch st-failed")
    docs_shot(page, "edges-usage")
    # on a phone the axis text keeps a readable size
    phone = open_page(f"{module_server.url}/#/usage", **PHONE)
    axis = phone.locator("#usage-status svg text.chart-axis").first
    expect(axis).to_be_visible()
    assert axis.bounding_box()["height"] >= 9, axis.bounding_box()
    phone_width = phone.evaluate("() => document.documentElement.clientWidth")
    assert phone.evaluate("() => document.documentElement.scrollWidth") <= phone_width


def test_timeline_opens_wide_and_a_run_without_tools_says_so(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    page = open_page(module_server.url, viewport={"width": 1440, "height": 900})
    start_session(page, title="Timeline edges")
    send(page, "history")  # answers without a tool
    wait_turns(page, 1)
    send(page, "tools 3")
    wait_turns(page, 2)
    page.get_by_role("button", name="Runs").click()
    runs = page.locator(".runs-panel .run")
    expect(runs).to_have_count(2)
    runs.nth(1).get_by_role("button", name="Timeline").click()  # the first turn, no tools
    dialog = page.locator("dialog.timeline-dialog[open]")
    expect(dialog.locator(".timeline-usage")).to_contain_text("took ")
    expect(dialog.locator(".timeline-usage")).not_to_contain_text("model")
    expect(dialog.locator(".timeline-empty")).to_contain_text("No tool calls")
    dialog.get_by_role("button", name="Close the timeline").click()
    runs.nth(0).get_by_role("button", name="Timeline").click()
    dialog = page.locator("dialog.timeline-dialog[open]")
    expect(dialog.locator(".timeline-table tbody tr")).to_have_count(3)
    expect(dialog.locator(".timeline-usage")).to_contain_text("model")
    box = dialog.bounding_box()
    assert box["width"] > 900, box  # not a 330 px side panel
    table = dialog.locator(".timeline-table")
    status = table.locator("tbody tr").first.locator("td").last
    table_box, status_box = table.bounding_box(), status.bounding_box()
    assert status_box["x"] + status_box["width"] <= table_box["x"] + table_box["width"] + 1
    assert status_box["x"] + status_box["width"] <= box["x"] + box["width"]
    for label in dialog.locator("svg text.chart-axis").all():
        text = label.text_content() or ""
        assert not text.startswith("…"), text
    docs_shot(page, "edges-timeline")


def test_errors_highlight_leaves_with_the_page(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    # a session of its own: the module's other tests may have run on the other worker
    sid = api_session(module_server.url)
    page = open_page(f"{module_server.url}/#/errors")
    errors = page.locator(".topnav a[href='#/errors']")
    expect(errors).to_have_attribute("aria-current", "page")
    page.locator(f".session-link[href='#/s/{sid}']").click()
    expect(page.locator(".session-view")).to_be_visible()
    expect(page.locator(".topnav a[aria-current]")).to_have_count(0)


def test_elicitation_form_checkbox_and_number(
    module_server: SharedServer, open_page: OpenPage
) -> None:
    page = open_page(module_server.url)
    start_session(page, title="Form")
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name"},
            "count": {"type": "integer", "title": "Count"},
            "sure": {"type": "boolean", "title": "I am sure"},
        },
    }
    send(page, f"elicit form {json.dumps(schema)}")
    card = page.locator(".elicitation-request")
    expect(card).to_have_count(1)
    box = card.get_by_label("I am sure")
    label = card.locator("label.check-label")
    box_rect, label_rect = box.bounding_box(), label.bounding_box()
    assert label_rect["x"] <= box_rect["x"] < label_rect["x"] + 24  # the box starts its label
    middle = box_rect["y"] + box_rect["height"] / 2
    assert abs(middle - (label_rect["y"] + label_rect["height"] / 2)) < 4
    style = """(el) => {
      const s = getComputedStyle(el);
      return [s.borderTopWidth, s.borderRadius, s.paddingLeft, s.backgroundColor, s.width];
    }"""
    assert card.get_by_label("Count").evaluate(style) == card.get_by_label("Name").evaluate(style)
    label.click()  # the label ticks its box
    expect(box).to_be_checked()
    docs_shot(page, "edges-form")
    card.get_by_label("Count").fill("3")
    card.get_by_role("button", name="Submit").click()
    wait_turns(page, 1)
    expect(page.locator(".msg-agent").last).to_contain_text('"count": 3')


def test_phone_header_and_placeholder(module_server: SharedServer, open_page: OpenPage) -> None:
    page = open_page(module_server.url, **PHONE)
    start_session(page, title="Phone")
    send(page, "write phone.txt hi")  # waits on the permission: a turn is running
    expect(page.locator(".stop-button")).to_be_visible()
    height = page.viewport_size["height"]
    bottom = page.evaluate(
        "() => document.querySelector('.session-tabs').getBoundingClientRect().bottom"
    )
    assert bottom < height / 4, (bottom, height)
    box = page.locator("#prompt-input")
    fits = box.evaluate(
        """(el) => {
          const s = getComputedStyle(el);
          const ctx = document.createElement("canvas").getContext("2d");
          ctx.font = s.font;
          const room = el.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
          return [ctx.measureText(el.placeholder).width, room];
        }"""
    )
    docs_shot(page, "edges-phone")
    assert fits[0] <= fits[1], fits  # one line, not one word a line
    page.get_by_role("button", name="Allow", exact=True).click()
    wait_turns(page, 1)
