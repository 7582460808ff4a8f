"""Titles (API.md, Finding and keeping sessions) in the store: the first prompt's first
line, the agent's ``session_info_update`` over it, never over a person's title."""

from __future__ import annotations

import pytest

from store import Database, SessionRecord
from store.glance import (
    MAX_TITLE_CHARS,
    fork_title,
    prompt_title,
    set_agent_title,
    set_prompt_title,
)

pytestmark = pytest.mark.anyio


def test_prompt_title_is_the_first_line_within_80_characters() -> None:
    assert prompt_title("\n\n  fix the login bug  \nmore") == "fix the login bug"
    long = prompt_title("y" * 200)
    assert long is not None and len(long) == MAX_TITLE_CHARS and long.endswith("…")
    assert prompt_title(" \n \t") is None
    assert fork_title("Try") == "Try (fork)" and fork_title(None) is None


async def _title(store: Database) -> tuple[str | None, str | None]:
    async with store.read() as db:
        record = await db.get(SessionRecord, "s1")
        assert record is not None
        return record.title, record.title_source


async def _apply(store: Database, func: object, text: str) -> None:
    async with store.write() as db, db.begin():
        await func(db, "s1", text)  # type: ignore[operator]


async def test_agent_title_replaces_the_prompts_but_not_a_persons(store: Database) -> None:
    async with store.write() as db, db.begin():
        record = await db.get(SessionRecord, "s1")
        assert record is not None
        record.title, record.title_source = None, None
    await _apply(store, set_prompt_title, "first prompt\nsecond line")
    assert await _title(store) == ("first prompt", "prompt")
    await _apply(store, set_prompt_title, "a later prompt")
    assert await _title(store) == ("first prompt", "prompt")
    await _apply(store, set_agent_title, "Agent's name for it")
    assert await _title(store) == ("Agent's name for it", "agent")
    await _apply(store, set_agent_title, "  ")
    assert await _title(store) == ("Agent's name for it", "agent")
    async with store.write() as db, db.begin():
        record = await db.get(SessionRecord, "s1")
        assert record is not None
        record.title, record.title_source = "Mine", "user"
    await _apply(store, set_agent_title, "Agent again")
    assert await _title(store) == ("Mine", "user")
