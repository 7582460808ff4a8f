"""The run tests' app measures turn and tool durations on an injected clock that follows
real time until a test jumps it forward (``server_clock.advance``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from server.app import create_app
from server.settings import Settings
from tests.runs.support import Clock


@pytest.fixture
def server_clock() -> Clock:
    return Clock(follow=True)


@pytest.fixture
def client(settings: Settings, server_clock: Clock) -> Iterator[TestClient]:
    with TestClient(create_app(settings, clock=server_clock)) as test_client:
        yield test_client
