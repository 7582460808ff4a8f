"""Repository functions for the cluster's coordination tables (PostgreSQL only): the
nodes and their heartbeats, session leases, and the commit announcements (NOTIFY).
They never commit: the caller owns the transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Row, delete, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from store.models import Node, SessionOwner

__all__ = [
    "claim_session",
    "claim_sessions",
    "expired_leases",
    "notify",
    "other_owner_url",
    "register_node",
    "release_session",
    "renew_leases",
]

_NOTIFY = text("SELECT pg_notify(:channel, :payload)")


async def register_node(db: AsyncSession, node_id: str, url: str, now: datetime) -> None:
    """Insert the node, or restart its row (same id: a restarted node)."""
    from sqlalchemy.dialects.postgresql import insert as pg_insert  # PostgreSQL only

    stmt = pg_insert(Node).values(id=node_id, url=url, started_at=now, heartbeat_at=now)
    await db.execute(
        stmt.on_conflict_do_update(
            index_elements=[Node.id],
            set_={"url": url, "started_at": now, "heartbeat_at": now},
        )
    )


async def claim_session(
    db: AsyncSession, session_id: str, node_id: str, now: datetime, until: datetime
) -> bool:
    """Take the session's lease (until ``until``) unless another node holds a valid one."""
    from sqlalchemy.dialects.postgresql import insert as pg_insert  # PostgreSQL only

    stmt = pg_insert(SessionOwner).values(session_id=session_id, node_id=node_id, lease_until=until)
    claim = stmt.on_conflict_do_update(
        index_elements=[SessionOwner.session_id],
        set_={"node_id": node_id, "lease_until": until},
        where=(SessionOwner.lease_until < now) | (SessionOwner.node_id == node_id),
    ).returning(SessionOwner.node_id)
    return (await db.execute(claim)).first() is not None


async def other_owner_url(
    db: AsyncSession, session_id: str, node_id: str, now: datetime
) -> str | None:
    """The URL of a node other than ``node_id`` holding a valid lease on the session."""
    row = (
        await db.execute(
            select(SessionOwner.node_id, Node.url)
            .join(Node, Node.id == SessionOwner.node_id)
            .where(
                SessionOwner.session_id == session_id,
                SessionOwner.lease_until >= now,
                SessionOwner.node_id != node_id,
            )
        )
    ).first()
    return None if row is None else str(row.url)


async def release_session(db: AsyncSession, session_id: str, node_id: str) -> None:
    await db.execute(
        delete(SessionOwner).where(
            SessionOwner.session_id == session_id, SessionOwner.node_id == node_id
        )
    )


async def renew_leases(db: AsyncSession, node_id: str, now: datetime, until: datetime) -> None:
    """The heartbeat: extend every lease the node holds, and stamp the node."""
    await db.execute(
        update(SessionOwner).where(SessionOwner.node_id == node_id).values(lease_until=until)
    )
    await db.execute(update(Node).where(Node.id == node_id).values(heartbeat_at=now))


async def expired_leases(db: AsyncSession, now: datetime) -> Sequence[Row[str, str]]:
    """(session_id, node_id) of the leases that ran out, locked (others' locks skipped)."""
    query = (
        select(SessionOwner.session_id, SessionOwner.node_id)
        .where(SessionOwner.lease_until < now)
        .with_for_update(skip_locked=True)
    )
    return (await db.execute(query)).all()


async def claim_sessions(
    db: AsyncSession, session_ids: Sequence[str], node_id: str, until: datetime
) -> None:
    await db.execute(
        update(SessionOwner)
        .where(SessionOwner.session_id.in_(session_ids))
        .values(node_id=node_id, lease_until=until)
    )


async def notify(db: AsyncSession, channel: str, payloads: Sequence[str]) -> None:
    """NOTIFY ``channel`` with each payload when the transaction commits."""
    for payload in payloads:
        await db.execute(_NOTIFY, {"channel": channel, "payload": payload})
