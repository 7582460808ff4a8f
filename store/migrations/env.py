"""Alembic environment: runs on a connection handed over by ``store.migrate`` or, from
the alembic command line, on ``DATABASE_URL``."""

from __future__ import annotations

import asyncio
import os

from alembic import context
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from store.models import schema_metadata

DEFAULT_URL = "sqlite+aiosqlite:///./data/agent-sessions.db"


def _configure_and_run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=schema_metadata(),
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_from_url(url: str) -> None:
    engine = create_async_engine(url)
    async with engine.connect() as connection:
        await connection.run_sync(_configure_and_run)
        await connection.commit()
    await engine.dispose()


shared = context.config.attributes.get("connection")
if shared is not None:
    _configure_and_run(shared)
else:
    asyncio.run(_run_from_url(os.environ.get("DATABASE_URL", DEFAULT_URL)))
