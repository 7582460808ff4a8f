"""Shared fixtures. The anyio backend is pinned to asyncio.

- ``workspace_root``: a temporary workspace root holding ``demo``, a small git repo.
- ``make_settings(**env)``: Settings for a test (SQLite file in tmp, demo agent, short
  grace periods), overridable with API.md variable names.
- ``client``: a Starlette TestClient running the app's lifespan; ``demo_repo_id``.
- ``live_server``: a factory starting a real ``agent-sessions serve`` process (uvicorn)
  on a free port; returns a ``LiveServer`` with ``.url``, ``.ws_url``, ``.stop()``,
  ``.kill()``.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx
import pytest
from starlette.testclient import TestClient

from server.app import create_app
from server.settings import Settings, load_settings
from store import Database, Repo, open_database, upgrade
from store import repos as repo_store
from tests.helpers import demo_command, wait_for

# Starlette's TestClient sends ``Host: testserver``, which ALLOWED_HOSTS rightly refuses;
# the tests' clients speak as a local browser does (``Host: localhost``), in one place.
TestClient.__init__.__defaults__ = ("http://localhost", *TestClient.__init__.__defaults__[1:])  # type: ignore[index,misc]
_websocket_connect = TestClient.websocket_connect


def _local_websocket_connect(self: TestClient, url: str, *args: Any, **kwargs: Any) -> Any:
    return _websocket_connect(self, urljoin("ws://localhost", url), *args, **kwargs)


TestClient.websocket_connect = _local_websocket_connect  # type: ignore[method-assign]

ROOT = Path(__file__).resolve().parent.parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``scripts/test`` runs ``-n 2 --dist loadgroup``) the browser
    tests go to one worker as one group: they share one Chromium per package and live
    servers per module, which a test-by-test spread would start again on each worker."""
    for item in items:
        if item.get_closest_marker("browser") is not None:
            item.add_marker(pytest.mark.xdist_group("browser"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def make_git_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name, text in (files or {"README.md": "# Demo\nsecond line\nthird line\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    return path


@pytest.fixture
def workspace_root(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    make_git_repo(root / "demo")
    return root


PG_SERVER = os.environ.get(
    "AGENT_SESSIONS_TEST_PG"
)  # e.g. postgresql+asyncpg://postgres@127.0.0.1:55432/postgres


def fresh_pg_database(server_url: str) -> str:
    """Create an empty database on the test PostgreSQL server; return its URL."""
    import asyncio
    import threading
    import uuid

    import asyncpg

    name = f"t_{uuid.uuid4().hex[:16]}"
    plain = server_url.replace("postgresql+asyncpg://", "postgresql://")

    async def create() -> None:
        conn = await asyncpg.connect(plain)
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()

    thread = threading.Thread(target=lambda: asyncio.run(create()))
    thread.start()
    thread.join()
    return server_url.rsplit("/", 1)[0] + f"/{name}"


def test_database_url(tmp_path: Path) -> str:
    """SQLite in the test's folder, or a fresh PostgreSQL database when the suite runs
    against PostgreSQL (AGENT_SESSIONS_TEST_PG)."""
    marker = tmp_path / ".database_url"
    if marker.exists():
        return marker.read_text()
    url = (
        fresh_pg_database(PG_SERVER)
        if PG_SERVER
        else f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}"
    )
    marker.write_text(url)
    return url


test_database_url.__test__ = False  # type: ignore[attr-defined]


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    """test_database_url, as a fixture (tests that open the store themselves)."""
    return test_database_url(tmp_path)


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[Database]:
    """The store at head holding repository ``r1`` and its active session ``s1``."""
    from tests.store.test_store import T0, session_record

    db = open_database(database_url)
    await upgrade(db)
    async with db.write() as session, session.begin():
        await repo_store.add_repo(
            session, Repo(id="r1", name="demo", path="/w/demo", is_git_repo=True, created_at=T0)
        )
        session.add(session_record("s1"))
    try:
        yield db
    finally:
        await db.close()


def settings_env(tmp_path: Path, workspace_root: Path, **env: Any) -> dict[str, str]:
    base = {
        "AGENT_WORKSPACE_ROOT": str(workspace_root),
        "DATABASE_URL": test_database_url(tmp_path),
        "AGENT_STOP_GRACE": "0.5",
        "NODE_ID": "test-node",  # a restarted server is the same node (PostgreSQL leases)
        "AGENT_START_TIMEOUT": "20",
        # The sandbox's own tests (tests/sandbox) and the peers turn it on; elsewhere
        # agents run as before, so a host without bubblewrap runs the same suite.
        "AGENT_SANDBOX": "off",
    }
    base.update({k: str(v) for k, v in env.items()})
    return base


@pytest.fixture
def make_settings(tmp_path: Path, workspace_root: Path) -> Callable[..., Settings]:
    def make(**env: Any) -> Settings:
        return load_settings(settings_env(tmp_path, workspace_root, **env), env_file=None)

    return make


@pytest.fixture
def make_client(make_settings: Callable[..., Settings]) -> Iterator[Callable[..., TestClient]]:
    """In-process apps with the demo agent: ``make_client(demo_env, **settings)``; each
    client is entered now and closed when the test ends."""
    clients: list[TestClient] = []

    def make(demo_env: dict[str, str] | None = None, **env: Any) -> TestClient:
        settings = make_settings(AGENT_COMMAND=demo_command(**(demo_env or {})), **env)
        client = TestClient(create_app(settings))
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings()


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as test_client:
        yield test_client


@pytest.fixture
def demo_repo_id(client: TestClient) -> str:
    repos = client.get("/api/repos").json()["repos"]
    return next(r["id"] for r in repos if r["name"] == "demo")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LiveServer:
    process: subprocess.Popen[bytes]
    port: int
    env: dict[str, str]
    log_path: Path
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, timeout: float = 30) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)


def start_server(
    env: dict[str, str], log_path: Path, *, port: int | None = None, timeout: float = 30
) -> LiveServer:
    port = port or free_port()
    full_env = {**os.environ, **env, "PORT": str(port), "HOST": "127.0.0.1"}
    full_env.pop("API_TOKEN", None) if "API_TOKEN" not in env else None
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "serve"],
            cwd=ROOT,
            env=full_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    server = LiveServer(process, port, full_env, log_path)

    def ready() -> bool:  # polling a process we do not own; not a stand-in for an event
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}:\n{server.log()}")
        try:
            return httpx.get(f"{server.url}/readyz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(ready, lambda: f"server did not become ready:\n{server.log()}", timeout)
    except AssertionError:
        server.kill()
        raise
    return server


@pytest.fixture
def live_server(tmp_path: Path, workspace_root: Path) -> Iterator[Callable[..., LiveServer]]:
    servers: list[LiveServer] = []

    def start(**env: Any) -> LiveServer:
        server = start_server(
            settings_env(tmp_path, workspace_root, **env), tmp_path / f"server-{len(servers)}.log"
        )
        servers.append(server)
        return server

    yield start
    for server in servers:
        if server.process.poll() is None:
            server.stop()
