"""Issue 17, item 9: two nodes started at the same moment on a fresh PostgreSQL database.

Both run the migrations and register the repositories under the workspace root at start;
without a lock between them one exited (code 3) in most tries: a duplicate
``alembic_version`` type, ``relation "repos" already exists``, or a second row for the
same repository. Several rounds, each on a fresh database: both nodes come up, the schema
is at head, and each repository is registered once.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from store import open_database
from tests.conftest import (
    PG_SERVER,
    ROOT,
    LiveServer,
    fresh_pg_database,
    make_git_repo,
    settings_env,
    start_server,
)

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        not PG_SERVER,
        reason="needs PostgreSQL: run through ./scripts/test (AGENT_SESSIONS_TEST_PG)",
    ),
]

ROUNDS = 3
NODES = 4  # start-up writes of four node processes, released at one instant
# One node's start-up writes (migrate, then register the repositories under the root), in
# a process of its own, after its imports, when the parent writes a line to its stdin.
START_UP_WRITES = """
import asyncio, sys
from server.app import auto_register
from server.settings import load_settings
from store import open_database, upgrade

url, workspace = sys.argv[1], sys.argv[2]
settings = load_settings({"AGENT_WORKSPACE_ROOT": workspace, "DATABASE_URL": url}, env_file=None)

async def main() -> None:
    db = open_database(url)
    try:
        await upgrade(db)
        await auto_register(settings, db)
    finally:
        await db.close()

print("ready", flush=True)
sys.stdin.readline()
asyncio.run(main())
"""


def start_up_writes(workspace: Path) -> tuple[list[str], int]:
    """NODES processes run their start-up writes at once on a fresh database. Returns the
    errors of those that failed and the number of repository rows."""
    url = fresh_pg_database(PG_SERVER or "")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", START_UP_WRITES, url, str(workspace)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(NODES)
    ]
    try:
        for proc in procs:  # every process imported everything and waits at the line
            assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        errors = []
        for proc in procs:
            _out, err = proc.communicate(timeout=60)
            if proc.returncode != 0:
                lines = err.strip().splitlines()  # the exception line, not SQLAlchemy's link
                errors.append(next((x for x in reversed(lines) if "Error:" in x), lines[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return errors, count_repos(url)


def count_repos(url: str) -> int:
    async def count() -> int:
        db = open_database(url)
        try:
            async with db.read() as session:
                return int((await session.execute(text("SELECT count(*) FROM repos"))).scalar_one())
        finally:
            await db.close()

    return asyncio.run(count())


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_start_up_writes_of_nodes_starting_together(tmp_path: Path, round_: int) -> None:
    workspace = tmp_path / "workspace"
    for name in ("alpha", "beta", "gamma"):
        make_git_repo(workspace / name)
    errors, repos = start_up_writes(workspace)
    assert errors == [], (round_, errors)
    assert repos == 3


def start_together(tmp_path: Path, workspace: Path) -> list[LiveServer | BaseException]:
    """Spawn two nodes on one fresh database at once; each one, or why it failed."""

    def start(name: str) -> LiveServer:
        env = settings_env(tmp_path, workspace, NODE_ID=name, CLUSTER_SECRET="s3cret")
        return start_server(env, tmp_path / f"{name}.log")

    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(start, name) for name in ("node-a", "node-b")]
        return [f.exception() or f.result() for f in futures]


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_two_nodes_started_together_on_a_fresh_database_both_come_up(
    tmp_path: Path, round_: int
) -> None:
    workspace = tmp_path / "workspace"
    for name in ("alpha", "beta", "gamma"):
        make_git_repo(workspace / name)
    nodes = start_together(tmp_path, workspace)
    try:
        failures = [n for n in nodes if not isinstance(n, LiveServer)]
        assert failures == [], failures
        for node in nodes:
            assert isinstance(node, LiveServer)
            assert httpx.get(f"{node.url}/readyz", timeout=10).status_code == 200
            repos = httpx.get(f"{node.url}/api/repos", timeout=10).json()["repos"]
            assert sorted(r["name"] for r in repos) == ["alpha", "beta", "gamma"], round_
    finally:
        for node in nodes:
            if isinstance(node, LiveServer):
                node.stop()
