"""Repository functions for the images a prompt carried (kept once per session by their
sha256). They never commit: the caller owns the transaction."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from store.models import Attachment

__all__ = ["get_attachment", "keep_attachments"]


async def keep_attachments(db: AsyncSession, attachments: Sequence[Attachment]) -> None:
    """Add each attachment its session does not have yet (by sha256)."""
    for attachment in attachments:
        exists = await db.execute(
            select(Attachment.sha256).where(
                Attachment.session_id == attachment.session_id,
                Attachment.sha256 == attachment.sha256,
            )
        )
        if exists.first() is None:
            db.add(attachment)
    if attachments:
        await db.flush()


async def get_attachment(db: AsyncSession, session_id: str, sha256: str) -> Attachment | None:
    found = await db.execute(
        select(Attachment).where(Attachment.session_id == session_id, Attachment.sha256 == sha256)
    )
    row: Attachment | None = found.scalars().first()
    return row
