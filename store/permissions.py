"""Repository functions for permission requests: the first decision wins."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from store.jsontypes import JsonObject, JsonValue
from store.models import Permission

__all__ = [
    "PendingPermission",
    "decide_permission",
    "get_permission",
    "insert_permission",
    "pending_permissions",
]


async def get_permission(db: AsyncSession, request_id: str) -> Permission | None:
    return await db.get(Permission, request_id)


async def decide_permission(
    db: AsyncSession, request_id: str, outcome: JsonObject, when: datetime
) -> bool:
    """Record ``outcome`` unless one is recorded already; True when this call decided."""
    result = await db.execute(
        update(Permission)
        .where(Permission.id == request_id, Permission.outcome.is_(None))
        .values(outcome=outcome, decided_at=when)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


class PendingPermission(msgspec.Struct, frozen=True):
    """What start-up recovery reads of a permission request without a decision."""

    id: str
    session_id: str
    run_id: str | None
    tool_call_id: str | None
    options: JsonValue


async def pending_permissions(
    db: AsyncSession, session_id: str | None = None
) -> list[PendingPermission]:
    """The requests without a decision (of one session, or all), read with the table's
    own columns (start-up recovery: no ORM mapper configured, no ORM compilation)."""
    t = Permission.__table__.c
    query = select(t.id, t.session_id, t.run_id, t.tool_call_id, t.options)
    query = query.where(t.outcome.is_(None))
    if session_id is not None:
        query = query.where(t.session_id == session_id)
    return [PendingPermission(*row) for row in await db.execute(query)]


async def insert_permission(
    db: AsyncSession,
    request_id: str,
    session_id: str,
    run_id: str | None,
    tool_call_id: str | None,
    options: Any,
    when: datetime,
) -> None:
    db.add(
        Permission(
            id=request_id,
            session_id=session_id,
            run_id=run_id,
            tool_call_id=tool_call_id,
            options=options,
            outcome=None,
            created_at=when,
        )
    )
    await db.flush()
