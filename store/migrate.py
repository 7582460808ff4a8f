"""Apply and revert the Alembic migrations programmatically.

Several nodes may start at the same moment on one PostgreSQL database: the migrations
(and the start-up registration of repositories, see ``startup_lock``) run under a
transaction-scoped advisory lock, so one node migrates while the others wait and then
find the schema at head. SQLite serialises writers by itself (``BEGIN IMMEDIATE``).

A start on a database already at head does not import Alembic (~0.1 s of start-up): the
head is read from the migration scripts' source text and compared with the database's
``alembic_version`` row in one query; anything else (a fresh or older database, a
revision the scripts do not name, several heads) goes through Alembic as before.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from store.engine import Database

if TYPE_CHECKING:  # imported when a migration runs
    from alembic.config import Config

__all__ = [
    "STARTUP_LOCK",
    "alembic_config",
    "current_revision",
    "downgrade",
    "head_revision",
    "startup_lock",
    "upgrade",
]

_MIGRATIONS = Path(__file__).parent / "migrations"
# The advisory lock key of start-up work (any 64-bit number no other code uses):
# int.from_bytes(b"agentses", "big") - 2**63, a stable label.
STARTUP_LOCK = int.from_bytes(b"agentses", "big") - 2**63
# `revision = "0005_x"` / `down_revision: str | None = "0004_y"` at the start of a line
_REVISION_LINE = re.compile(r"^(down_revision|revision)\s*(?::[^=\n]*)?=\s*(.+?)\s*$", re.M)


async def startup_lock(conn: AsyncConnection | AsyncSession) -> None:
    """Inside a transaction on PostgreSQL: wait for, then hold until commit or rollback,
    the lock every node takes for its start-up writes. A no-op on SQLite."""
    dialect = conn.get_bind().dialect if isinstance(conn, AsyncSession) else conn.dialect
    if dialect.name == "postgresql":
        await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": STARTUP_LOCK})


@cache
def head_revision() -> str | None:
    """The one head of the migration scripts, read from their source (no Alembic import);
    None when the text does not say plainly (Alembic then decides, as always)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (_MIGRATIONS / "versions").glob("*.py"):
        found = dict(_REVISION_LINE.findall(path.read_text()))
        try:
            revision = ast.literal_eval(found["revision"])
            down = ast.literal_eval(found["down_revision"])
        except (KeyError, ValueError, SyntaxError):
            return None
        if not isinstance(revision, str):
            return None
        revisions.add(revision)
        if isinstance(down, str):
            parents.add(down)
        elif isinstance(down, tuple | list):
            parents.update(str(d) for d in down)
        elif down is not None:
            return None
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


async def current_revision(database: Database) -> str | None:
    """The database's one ``alembic_version`` row, in one query with the driver; None for a
    fresh database (no table), several rows or any error (Alembic then decides)."""
    try:
        async with database.reader_engine.connect() as conn:
            rows = (await conn.exec_driver_sql("SELECT version_num FROM alembic_version")).all()
    except DBAPIError:
        return None
    return str(rows[0][0]) if len(rows) == 1 else None


def alembic_config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    return config


def _run(connection: Connection, action: str, revision: str) -> None:
    from alembic import command

    config = alembic_config()
    config.attributes["connection"] = connection
    getattr(command, action)(config, revision)


async def upgrade(database: Database, revision: str = "head") -> None:
    """Bring the schema up to ``revision`` in one transaction (one node at a time); at
    head already, one query and nothing else."""
    if revision == "head" and (head := head_revision()) is not None:
        if await current_revision(database) == head:
            return
    async with database.writer_engine.begin() as conn:
        await startup_lock(conn)
        await conn.run_sync(_run, "upgrade", revision)


async def downgrade(database: Database, revision: str = "base") -> None:
    async with database.writer_engine.begin() as conn:
        await startup_lock(conn)
        await conn.run_sync(_run, "downgrade", revision)
