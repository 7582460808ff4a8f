"""The Usage and Errors pages and a run's timeline in Chromium against a real server:
what is on screen is what the API says. The history is tests/stats/seed.py moved to the
last days, plus real demo-agent runs; the page runs in New York time."""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

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
from tests.stats.seed import seed  # noqa: E402

pytestmark = pytest.mark.browser

OpenPage = Callable[..., Any]
Shot = Callable[..., Path]
ZONE = "America/New_York"


def server_env(workspace_root: Path) -> dict[str, str]:
    return {"MAX_CONCURRENT_SESSIONS": "50"}


@pytest.fixture(scope="module")
def seeded(module_server: SharedServer) -> SharedServer:
    repos = httpx.get(f"{module_server.url}/api/repos").json()["repos"]
    repo = next(r for r in repos if r["name"] == "demo")
    shift = datetime.now(UTC).date() - date(2026, 3, 9)
    seed(module_server.server.env["DATABASE_URL"], repo["id"], timedelta(days=shift.days))
    return module_server


def js_duration(ms: float | None) -> str:
    """dom.js duration() for the values these tests meet (under a minute)."""
    if ms is None:
        return "–"
    if ms < 1000:
        return f"{round(ms)} ms"
    s = ms / 1000
    return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"


def js_money(amount: float) -> str:
    """dom.js money() for USD."""
    digits = 2 if amount == 0 or abs(amount) >= 0.01 else 4 if abs(amount) >= 0.0001 else 6
    return f"${amount:.{digits}f}"


VERB_KINDS = {"read": "read", "write": "edit", "edit": "edit", "run": "execute", "fetch": "fetch"}


def grouped(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """toolgroups.js's groups, for the rows the seed and the demo agent make: a title's
    first word when it has arguments, its kind; p95 the slowest title's, the median
    weighted by calls."""
    groups: dict[str, dict[str, Any]] = {}
    for tool in tools:
        title = tool["toolName"] or "(unnamed)"
        verb = title.split()[0]
        kind = VERB_KINDS.get("".join(c for c in verb.lower() if c.isalpha()), "other")
        label = title if verb == title else verb
        group = groups.setdefault(
            f"{kind}:{label.lower()}",
            {"label": label, "kind": kind, "calls": 0, "titles": 0, "p95": None, "sum": 0.0},
        )
        group["calls"] += tool["calls"]
        group["titles"] += 1
        p95, median = tool["durationMs"]["p95"], tool["durationMs"]["median"]
        group["p95"] = p95 if group["p95"] is None else max(group["p95"], p95)
        group["sum"] += median * tool["calls"]
    for group in groups.values():
        group["median"] = group["sum"] / group["calls"]
    return list(groups.values())


def page_range(days: int = 30) -> dict[str, str]:
    today = datetime.now(ZoneInfo(ZONE)).date()
    start, end = today - timedelta(days=days - 1), today + timedelta(days=1)
    return {"from": start.isoformat(), "to": end.isoformat(), "tz": ZONE}


def api(server: SharedServer, path: str, **params: Any) -> dict[str, Any]:
    response = httpx.get(f"{server.url}{path}", params={**page_range(), **params})
    assert response.status_code == 200, response.text
    return dict(response.json())


def table_rows(page: Any, card: str) -> list[list[str]]:
    rows = page.locator(f"#{card} table tbody tr")
    return [
        [cell.strip() for cell in rows.nth(i).locator("th, td").all_inner_texts()]
        for i in range(rows.count())
    ]


def open_usage(seeded: SharedServer, open_page: OpenPage) -> Any:
    page = open_page(f"{seeded.url}/#/usage", timezone_id=ZONE)
    expect(page.locator("#usage-failing table tbody tr").first).to_be_visible()
    return page


def test_usage_page_shows_what_the_api_says(
    seeded: SharedServer, open_page: OpenPage, shot: Shot
) -> None:
    page = open_usage(seeded, open_page)
    expect(page.locator(".topnav a[href='#/usage']")).to_have_attribute("aria-current", "page")

    days = {b["key"]: b for b in api(seeded, "/api/stats", groupBy="day")["buckets"]}
    statuses = ["completed", "failed", "cancelled", "paused", "interrupted", "running"]
    shown = [s for s in statuses if any(b["byStatus"].get(s) for b in days.values())]
    head = page.locator("#usage-status table thead th").all_inner_texts()
    assert [c.strip() for c in head] == ["Day", *shown]
    expected = [
        [key, *(str(b["byStatus"].get(s, 0)) for s in shown)] for key, b in sorted(days.items())
    ]
    assert table_rows(page, "usage-status") == expected

    cost_rows = {r[0]: r[1:] for r in table_rows(page, "usage-cost")}
    agents = [c.strip() for c in page.locator("#usage-cost table thead th").all_inner_texts()][1:]
    for agent in agents:
        per_day = api(seeded, "/api/stats", groupBy="day", agentId=agent)["buckets"]
        for bucket in per_day:
            usd = sum(c["amount"] for c in bucket["cost"] if c["currency"] == "USD")
            if usd:
                cell = cost_rows[bucket["key"]][agents.index(agent)]
                assert cell == f"{usd:.{2 if usd >= 1 else 4}f} USD"
    tokens = {r[0]: r[1:] for r in table_rows(page, "usage-tokens")}
    beta = api(seeded, "/api/stats", groupBy="day", agentId="beta")["buckets"]
    token_agents = [c.strip() for c in page.locator("#usage-tokens thead th").all_inner_texts()]
    for bucket in beta:
        total = bucket["tokens"]["input"] + bucket["tokens"]["output"]
        if total:
            assert tokens[bucket["key"]][token_agents.index("beta") - 1] == f"{total:,}"

    tools = api(seeded, "/api/stats/tools", limit=50)["tools"]
    slow = sorted(grouped(tools), key=lambda g: -g["p95"])[:10]
    assert table_rows(page, "usage-slow") == [
        [
            g["label"] if g["titles"] == 1 else f"{g['label']} ({g['titles']} titles)",
            g["kind"],
            str(g["calls"]),
            js_duration(g["median"]),
            js_duration(g["p95"]),
        ]
        for g in slow
    ]
    failing = sorted((t for t in tools if t["failures"]), key=lambda t: -t["failures"])
    assert [r[:2] for r in table_rows(page, "usage-failing")] == [
        [t["toolName"], str(t["failures"])] for t in failing[:10]
    ]

    # hover: the readout says the bar's numbers
    bar = page.locator("#usage-status rect.chart-bar[data-series='interrupted']").first
    bar.hover()
    label = bar.get_attribute("data-label")
    expect(page.locator("#usage-status .chart-readout")).to_have_text(
        f"{label} · interrupted: {days[label]['byStatus']['interrupted']} "
        f"(total {days[label]['runs']})"
    )
    shot(page, "usage")

    with page.expect_download() as info:
        page.get_by_role("button", name="Download CSV").click()
    rows = list(csv.DictReader(io.StringIO(Path(info.value.path()).read_text())))
    assert [(r["day"], int(r["runs"])) for r in rows] == [
        (k, b["runs"]) for k, b in sorted(days.items())
    ]
    assert [int(r["toolFailures"]) for r in rows] == [
        b["toolFailures"] for _, b in sorted(days.items())
    ]


def test_usage_filters(seeded: SharedServer, open_page: OpenPage) -> None:
    page = open_usage(seeded, open_page)
    page.select_option("#usage-agent", "beta") if page.locator(
        "#usage-agent option[value='beta']"
    ).count() else None
    page.select_option("#usage-range", "7")
    week = api(seeded, "/api/stats", groupBy="day", **page_range(7))["buckets"]
    expect(page.locator("#usage-status table tbody tr")).to_have_count(len(week))
    assert [r[0] for r in table_rows(page, "usage-status")] == [b["key"] for b in week]


def test_run_timeline_matches_the_tool_calls(
    seeded: SharedServer, open_page: OpenPage, shot: Shot
) -> None:
    page = open_page(seeded.url)
    session_id = start_session(page, title="Timeline")
    send(page, "tools 4 permission")
    page.get_by_role("button", name="Allow", exact=True).click()
    wait_turns(page, 1)
    page.get_by_role("button", name="Runs").click()
    run = page.locator(".runs-panel .run").first
    run.get_by_role("button", name="Timeline").click()
    rows = run.locator(".timeline-table tbody tr")
    expect(rows).to_have_count(4)

    run_id = run.get_attribute("data-run-id")
    calls = httpx.get(f"{seeded.url}/api/agent-runs/{run_id}/tool-calls").json()["data"]
    assert len(calls) == 4
    by_id = {c["toolCallId"]: c for c in calls}
    for i in range(4):
        row = rows.nth(i)
        call = by_id[row.get_attribute("data-tool-call-id")]
        cells = [c.strip() for c in row.locator("th, td").all_inner_texts()]
        assert cells[0] == call["toolName"]
        assert cells[4] == call["status"]
    first = rows.filter(has_text="(permission)")
    expect(first).to_have_count(1)  # the permission was asked before the first call only
    statuses = sorted(c["status"] for c in calls)
    assert statuses == ["completed", "completed", "completed", "error"]
    expect(run.locator(".timeline rect.tl-error")).to_have_count(1)
    expect(run.locator(".timeline rect.tl-permission")).to_have_count(1)
    run_body = httpx.get(f"{seeded.url}/api/agent-runs/{run_id}").json()
    usage = run.locator(".timeline-usage")
    expect(usage).to_contain_text(f"took {js_duration(run_body['durationMs'])}")
    expect(usage).to_contain_text(js_money(run_body["cost"]["amount"]))
    shot(page, "timeline")
    assert session_id


def test_errors_page_links_to_where_the_run_ended(
    seeded: SharedServer, open_page: OpenPage, shot: Shot
) -> None:
    session_id = api_session(seeded.url)
    prompted = httpx.post(f"{seeded.url}/api/sessions/{session_id}/prompt", json={"text": "crash"})
    assert prompted.status_code == 202, prompted.text
    run_id = prompted.json()["runId"]
    deadline = time.monotonic() + 15
    while httpx.get(f"{seeded.url}/api/agent-runs/{run_id}").json()["status"] == "running":
        assert time.monotonic() < deadline, "the crashed run never ended"
        time.sleep(0.1)  # polling the server's own state change, not standing in for it

    failed = httpx.get(
        f"{seeded.url}/api/agent-runs", params={"status": "failed,interrupted", "limit": 50}
    ).json()["data"]
    page = open_page(f"{seeded.url}/#/errors")
    items = page.locator(".error-run")
    expect(items).to_have_count(len(failed))
    for i, run in enumerate(failed):
        expect(items.nth(i)).to_have_attribute("data-run-id", run["id"])
        expect(items.nth(i).locator(".run-error")).to_have_text(
            run["errorMessage"] or "(no error message)"
        )
    crashed = page.locator(f".error-run[data-run-id='{run_id}']")
    expect(crashed.locator(".error-context li").first).to_be_visible()
    shot(page, "errors")
    crashed.get_by_role("link").click()
    expect(page).to_have_url(f"{seeded.url}/#/s/{session_id}/r/{run_id}")
    expect(page.locator(f".run-marker.revealed[data-run-id='{run_id}']")).to_be_visible()
    assert ROOT
