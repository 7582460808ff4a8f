"""The idle sweep skips only what it means to skip: a session ended or used since the
sweep began. Any other refusal or failure is not swallowed (the sweep loop logs it)."""

from __future__ import annotations

from datetime import datetime
from types import SimpleNamespace
from typing import Any

import pytest

from server.sessions.errors import ActiveRecently, SessionNotActive, Unavailable
from server.sessions.idle import sweep_idle
from store import Database
from tests.store.test_store import T0, session_record

pytestmark = pytest.mark.anyio


@pytest.fixture
async def database(store: Database) -> Database:
    """tests/conftest.py's store, with three sessions all last active long ago."""
    async with store.write() as session, session.begin():
        for ident in ("ended", "used", "idle"):
            session.add(session_record(ident))
    return store


class Hub(SimpleNamespace):
    """What the sweep uses of the hub: settings, the database and end_session."""

    def __init__(self, database: Database, refusals: dict[str, Exception]) -> None:
        super().__init__(settings=SimpleNamespace(idle_timeout_minutes=30), db=database)
        self.refusals = refusals
        self.ended: list[str] = []

    async def end_session(
        self, session_id: str, status: str, reason: str, *, idle_before: datetime
    ) -> Any:
        assert (status, reason) == ("completed", "idle_timeout")
        assert idle_before > T0
        if session_id in self.refusals:
            raise self.refusals[session_id]
        self.ended.append(session_id)


async def test_sessions_ended_or_used_meanwhile_are_skipped(database: Database) -> None:
    hub = Hub(
        database,
        {"ended": SessionNotActive("The session is already completed."), "used": ActiveRecently()},
    )
    assert sorted(await sweep_idle(hub)) == ["idle", "s1"]  # type: ignore[arg-type]
    assert sorted(hub.ended) == ["idle", "s1"]


async def test_any_other_refusal_is_not_swallowed(database: Database) -> None:
    hub = Hub(database, {"ended": Unavailable("shutting_down", "The server is shutting down.")})
    with pytest.raises(Unavailable):
        await sweep_idle(hub)  # type: ignore[arg-type]
