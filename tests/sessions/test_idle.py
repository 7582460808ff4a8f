"""The idle sweep skips only what it means to skip: a session ended or used since the
sweep began. Any other refusal or failure is not swallowed (the sweep loop logs it)."""

from __future__ import annotations

from datetime import datetime

import pytest

from server.sessions.errors import ActiveRecently, SessionNotActive, Unavailable
from server.sessions.supervision.idle import sweep_idle
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


class Ender:
    """The sweep's ``end``: ends a session as idle, or refuses as the supervisor would."""

    def __init__(self, refusals: dict[str, Exception]) -> None:
        self.refusals = refusals
        self.ended: list[str] = []

    async def __call__(self, session_id: str, idle_before: datetime) -> None:
        assert idle_before > T0
        if session_id in self.refusals:
            raise self.refusals[session_id]
        self.ended.append(session_id)


async def test_sessions_ended_or_used_meanwhile_are_skipped(database: Database) -> None:
    end = Ender(
        {"ended": SessionNotActive("The session is already completed."), "used": ActiveRecently()}
    )
    assert sorted(await sweep_idle(database, 30, end)) == ["idle", "s1"]
    assert sorted(end.ended) == ["idle", "s1"]


async def test_any_other_refusal_is_not_swallowed(database: Database) -> None:
    end = Ender({"ended": Unavailable("shutting_down", "The server is shutting down.")})
    with pytest.raises(Unavailable):
        await sweep_idle(database, 30, end)
