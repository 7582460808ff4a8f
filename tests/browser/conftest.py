"""Browser fixtures: headless Debian Chromium driven by Playwright's Python package.

``scripts/install-browser`` installs both. When either is missing (or Chromium cannot
start) every browser test is skipped with the reason; collection never fails. The browser
lives for this package only (Playwright's sync API runs its own event loop, which must be
gone before the asyncio tests of other packages run).

- ``browser``: the Chromium instance.
- ``server``: a live server (real uvicorn, demo agent) from ``live_server``.
- ``module_server``: one live server shared by the tests of a module (starting one costs
  seconds), with its workspace root (a ``demo`` git repo); a module may define
  ``server_env(workspace_root) -> dict`` for its settings and to prepare the workspace.
- ``open_page(url, **context_options)``: a fresh context and page whose uncaught page
  errors fail the test at teardown.
- ``shot(page, name)``: a screenshot in ``test-output/screenshots/<name>.png``; with
  ``readme=True`` and ``UPDATE_README_SCREENSHOT=1`` in the environment it is also copied
  to ``docs/screenshot.png``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, LiveServer, make_git_repo, settings_env, start_server

CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = ROOT / "test-output" / "screenshots"
WAIT_MS = 15_000  # any single wait on the page


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (run scripts/install-browser)")
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (run scripts/install-browser)")
    manager = sync_playwright().start()
    try:
        try:
            instance = manager.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        except Error as exc:
            pytest.skip(f"chromium does not start: {str(exc).splitlines()[0]}")
        yield instance
        instance.close()
    finally:
        manager.stop()


@pytest.fixture
def server(live_server: Callable[..., LiveServer]) -> LiveServer:
    return live_server()


@dataclass
class SharedServer:
    server: LiveServer
    workspace_root: Path

    @property
    def url(self) -> str:
        return self.server.url


@pytest.fixture(scope="module")
def module_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SharedServer]:
    tmp = tmp_path_factory.mktemp("ui")
    workspace = make_git_repo(tmp / "workspace" / "demo").parent
    make_env = getattr(request.module, "server_env", None)
    env = make_env(workspace) if make_env else {}
    server = start_server(settings_env(tmp, workspace, **env), tmp / "server.log")
    yield SharedServer(server, workspace)
    server.stop()


@pytest.fixture
def open_page(browser: Any) -> Iterator[Callable[..., Any]]:
    contexts: list[Any] = []
    errors: list[str] = []

    def open_(url: str, **options: Any) -> Any:
        options.setdefault("viewport", {"width": 1280, "height": 800})
        context = browser.new_context(**options)
        context.set_default_timeout(WAIT_MS)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(f"{url}: {exc}"))
        page.on("dialog", lambda dialog: dialog.accept())
        page.goto(url)
        return page

    yield open_
    for context in contexts:
        context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


@pytest.fixture(scope="package")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


@pytest.fixture
def shot(screenshots: Path) -> Callable[..., Path]:
    def take(page: Any, name: str, *, readme: bool = False) -> Path:
        path = screenshots / f"{name}.png"
        page.screenshot(path=str(path))
        if readme and os.environ.get("UPDATE_README_SCREENSHOT") == "1":
            (ROOT / "docs").mkdir(exist_ok=True)
            shutil.copyfile(path, ROOT / "docs" / "screenshot.png")
        return path

    return take
