"""Repository functions for permission requests: the first decision wins."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from store.jsontypes import JsonObject
from store.models import Permission

__all__ = ["decide_permission", "get_permission", "insert_permission", "pending_permissions"]


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


async def pending_permissions(
    db: AsyncSession, session_id: str | None = None
) -> Sequence[Permission]:
    query = select(Permission).where(Permission.outcome.is_(None))
    if session_id is not None:
        query = query.where(Permission.session_id == session_id)
    return (await db.execute(query)).scalars().all()


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
