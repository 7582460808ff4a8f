"""A person's answer to a question the agent asked (a permission request, an
elicitation): the live session decides it while it waits; once it no longer
waits (answered, timed out, cancelled, the session ended or the server restarted) the
store tells an answered request (409) from an unknown one (404)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from agent_bridge.jsontypes import JsonObject
from server.sessions.live.elicitations import ELICITATION
from server.sessions.live.pending import RequestKind
from server.sessions.live.permissions import PERMISSION
from server.sessions.live.session import LiveSession
from server.sessions.records import get_record
from server.sessions.supervision.registry import Registry
from store import Database
from store import messages as message_store
from store import permissions as permission_store

__all__ = ["answer_elicitation", "answer_permission"]


async def _answer(
    database: Database,
    registry: Registry,
    kind: RequestKind,
    session_id: str,
    request_id: str,
    decide: Callable[[LiveSession], anyio.Event],
    was_asked: Callable[[Any], Awaitable[bool]],
) -> None:
    await get_record(database, session_id)
    live = registry.get(session_id)
    if live is not None and request_id in live.pending:
        await decide(live).wait()
        return
    async with database.read() as db:
        asked = await was_asked(db)
    raise kind.answered() if asked else kind.not_found(request_id)


async def answer_permission(
    database: Database, registry: Registry, session_id: str, request_id: str, option_id: str
) -> None:
    async def was_asked(db: Any) -> bool:
        permission = await permission_store.get_permission(db, request_id)
        return permission is not None and permission.session_id == session_id

    await _answer(
        database,
        registry,
        PERMISSION,
        session_id,
        request_id,
        lambda live: live.questions.answer_permission(request_id, option_id),
        was_asked,
    )


async def answer_elicitation(
    database: Database,
    registry: Registry,
    session_id: str,
    request_id: str,
    action: str,
    content: Any,
) -> JsonObject:
    """Returns the outcome given to the agent."""
    outcome: JsonObject = {}

    def decide(live: LiveSession) -> anyio.Event:
        committed, given = live.questions.answer_elicitation(request_id, action, content)
        outcome.update(given)
        return committed

    async def was_asked(db: Any) -> bool:
        return await message_store.asked_elicitation(db, session_id, request_id)

    await _answer(database, registry, ELICITATION, session_id, request_id, decide, was_asked)
    return outcome
