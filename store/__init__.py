"""Persistence: models, the engine factory, repository functions, migrations.

Repository functions take an ``AsyncSession`` and never commit; the caller owns the
transaction.
"""

from store import (
    attachments,
    cluster,
    messages,
    permissions,
    replay,
    repos,
    runs,
    sessions,
    workspaces,
)
from store.engine import Database, open_database
from store.migrate import downgrade, startup_lock, upgrade
from store.models import (
    Base,
    Message,
    Node,
    Permission,
    Repo,
    Run,
    SessionOwner,
    SessionRecord,
    ToolCall,
    utcnow,
)

__all__ = [
    "Base",
    "Database",
    "Message",
    "Node",
    "Permission",
    "Repo",
    "Run",
    "SessionOwner",
    "SessionRecord",
    "ToolCall",
    "attachments",
    "cluster",
    "downgrade",
    "messages",
    "open_database",
    "permissions",
    "replay",
    "repos",
    "runs",
    "sessions",
    "startup_lock",
    "upgrade",
    "utcnow",
    "workspaces",
]
