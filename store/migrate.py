"""Apply and revert the Alembic migrations programmatically.

Several nodes may start at the same moment on one PostgreSQL database: the migrations
(and the start-up registration of repositories, see ``startup_lock``) run under a
transaction-scoped advisory lock, so one node migrates while the others wait and then
find the schema at head. SQLite serialises writers by itself (``BEGIN IMMEDIATE``).
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from store.engine import Database

__all__ = ["STARTUP_LOCK", "alembic_config", "downgrade", "startup_lock", "upgrade"]

_MIGRATIONS = Path(__file__).parent / "migrations"
# The advisory lock key of start-up work (any 64-bit number no other code uses):
# int.from_bytes(b"agentses", "big") - 2**63, a stable label.
STARTUP_LOCK = int.from_bytes(b"agentses", "big") - 2**63


async def startup_lock(conn: AsyncConnection | AsyncSession) -> None:
    """Inside a transaction on PostgreSQL: wait for, then hold until commit or rollback,
    the lock every node takes for its start-up writes. A no-op on SQLite."""
    dialect = conn.get_bind().dialect if isinstance(conn, AsyncSession) else conn.dialect
    if dialect.name == "postgresql":
        await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": STARTUP_LOCK})


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    return config


def _run(connection: Connection, action: str, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    getattr(command, action)(config, revision)


async def upgrade(database: Database, revision: str = "head") -> None:
    """Bring the schema up to ``revision`` in one transaction (one node at a time)."""
    async with database.writer_engine.begin() as conn:
        await startup_lock(conn)
        await conn.run_sync(_run, "upgrade", revision)


async def downgrade(database: Database, revision: str = "base") -> None:
    async with database.writer_engine.begin() as conn:
        await startup_lock(conn)
        await conn.run_sync(_run, "downgrade", revision)
