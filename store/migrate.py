"""Apply and revert the Alembic migrations programmatically."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Connection

from store.engine import Database

__all__ = ["alembic_config", "downgrade", "upgrade"]

_MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    return config


def _run(connection: Connection, action: str, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    getattr(command, action)(config, revision)


async def upgrade(database: Database, revision: str = "head") -> None:
    """Bring the schema up to ``revision`` in one transaction."""
    async with database.writer_engine.begin() as conn:
        await conn.run_sync(_run, "upgrade", revision)


async def downgrade(database: Database, revision: str = "base") -> None:
    async with database.writer_engine.begin() as conn:
        await conn.run_sync(_run, "downgrade", revision)
