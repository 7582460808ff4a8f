"""The store's tests run on a real SQLite file, and in the second pass of ./scripts/test
(``AGENT_SESSIONS_TEST_PG``) on a fresh PostgreSQL database; what only SQLite has (its
file, pragmas, BEGIN IMMEDIATE) is marked ``sqlite_only``. The ``database_url`` fixture
is tests/conftest.py's."""

from __future__ import annotations

import pytest

from tests.conftest import PG_SERVER

sqlite_only = pytest.mark.skipif(
    bool(PG_SERVER), reason="SQLite's own file, pragmas and locking (this pass is PostgreSQL)"
)
