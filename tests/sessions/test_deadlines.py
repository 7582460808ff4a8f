"""Shields with deadlines: a stop whose agent never finishes returns at its deadline
(with a warning) instead of holding shutdown or a request forever; the deadline covers the
turn's grace, the agent's polite stop and kill, and the supervisor's cleanup."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

import server.sessions.live.session as live_session_module
from server.sessions.agents.config import load_agents
from server.sessions.live.session import LiveSession
from server.sessions.services import Services
from server.settings import CLEANUP_SECONDS, Settings
from tests.store.test_store import session_record

pytestmark = pytest.mark.anyio


def live_session(settings: Settings, repo: Path) -> LiveSession:
    nothing: Any = None  # a stop that never started an agent touches no service
    services = Services(settings, nothing, nothing, nothing)
    agent = load_agents(settings)["default"]
    return LiveSession(services, session_record("s1"), repo, agent, {})


def test_a_stop_deadline_covers_the_grace_steps_and_the_cleanup(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    live = live_session(make_settings(AGENT_STOP_GRACE="2"), tmp_path)
    assert live.stop_deadline == 2 * 3 + CLEANUP_SECONDS * 3


async def test_a_stop_that_never_finishes_returns_at_its_deadline(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(live_session_module, "CLEANUP_SECONDS", 0.01)
    live = live_session(make_settings(AGENT_STOP_GRACE="0.01"), tmp_path)
    caplog.set_level(logging.WARNING, "agent_sessions.session")
    with anyio.fail_after(30):  # a guard against a hang, not a measurement
        with anyio.CancelScope() as scope:
            scope.cancel()  # even a cancelled caller waits (shielded), but not forever
            await live.stop("interrupted")
    assert live.stopping and not live.finished.is_set()  # nobody ever finished it
    assert "did not stop in time" in caplog.text
