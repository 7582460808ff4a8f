"""``create_app(settings)``: the Starlette application. Everything with a lifetime (the
database, writer, broker, the session domain and their tasks) is built in the lifespan,
nothing at import."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from sqlalchemy.engine import make_url
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_bridge import become_subreaper
from server.cluster import Cluster
from server.logs import REQUEST_ID
from server.sessions import Sessions, load_agents
from server.sessions.users import Revocations, Users
from server.settings import CLEANUP_SECONDS, Settings
from server.stream.broker import Broker
from server.stream.writer import Writer
from server.web.auth import AuthMiddleware
from server.web.errors import exception_handlers
from server.web.forwarding import ForwardingMiddleware
from server.web.routes import (
    client_tools,
    controls,
    glance,
    history,
    ops,
    prompts,
    repos,
    review,
    runs,
    sessions,
    stats,
    users,
    workspaces,
    ws,
)
from server.web.security import (
    BodyLimitMiddleware,
    HostMiddleware,
    OriginMiddleware,
    SecurityHeadersMiddleware,
)
from server.web.signins import SignIns
from server.web.state import AppState
from store import Database, Repo, open_database, startup_lock, upgrade, utcnow
from store import repos as repo_store

__all__ = ["create_app"]

log = logging.getLogger("agent_sessions.app")
STATIC = Path(__file__).parent / "web" / "static"


class RequestIdMiddleware:
    """Give every request an id: in its logs, in the X-Request-ID header, in 500 bodies."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        request_id = uuid.uuid4().hex[:16]
        scope.setdefault("state", {})["request_id"] = request_id
        token = REQUEST_ID.set(request_id)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", []).append((b"x-request-id", request_id.encode()))
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            REQUEST_ID.reset(token)


def ui_routes(directory: Path) -> list[Route]:
    """The web UI: ``/`` and the files beside index.html, one path segment each, so the
    UI never shadows an API path (unknown /api paths stay 404, wrong methods 405)."""
    files = {p.name: p for p in directory.iterdir() if p.is_file()}

    async def asset(request: Request) -> Response:
        path = files.get(request.path_params.get("name", "index.html"))
        if path is None:
            raise HTTPException(404)
        return FileResponse(path, headers={"Cache-Control": "no-cache"})

    return [
        Route("/", asset, methods=["GET", "HEAD"]),
        Route("/{name}", asset, methods=["GET", "HEAD"]),
    ]


def openapi_route() -> Route:
    """``GET /openapi.json``; the document's modules load on its first request, not
    during every start-up."""

    async def endpoint(request: Request) -> Response:
        from server.web.openapi import openapi_json

        return await openapi_json(request)

    return Route("/openapi.json", endpoint, methods=["GET"], name="openapi")


def _prepare_paths(settings: Settings) -> None:
    settings.workspace_root.mkdir(parents=True, exist_ok=True)
    url = make_url(settings.database_url)
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)


async def auto_register(settings: Settings, db: Database) -> None:
    """Register every git work tree directly under the workspace root (one node at a
    time: nodes starting together would both find a repository missing and add it)."""
    root = settings.workspace_root.resolve()
    candidates = sorted(p for p in root.iterdir() if p.is_dir() and (p / ".git").exists())
    async with db.write() as session, session.begin():
        await startup_lock(session)
        for candidate in candidates:
            path = repos.resolve_repo_path(root, str(candidate))
            if await repo_store.get_repo_by_path(session, str(path)) is None:
                await repo_store.add_repo(
                    session,
                    Repo(
                        id=str(uuid.uuid4()),
                        name=path.name,
                        path=str(path),
                        is_git_repo=True,
                        created_at=utcnow(),
                    ),
                )
                log.info("registered repository %s", path, extra={"event": "repo_registered"})


def create_app(settings: Settings, *, clock: Callable[[], float] = time.monotonic) -> Starlette:
    """The app; ``clock`` is the monotonic clock turn and tool durations are measured on."""
    agents = load_agents(settings)
    settings = settings.with_changes(workspace_root=settings.workspace_root.resolve())

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        _prepare_paths(settings)
        become_subreaper()
        db = open_database(settings.database_url)
        try:
            await upgrade(db)
            broker = Broker()

            async def take_over(session_ids: set[str]) -> None:  # runs once the domain exists
                await domain.take_over(session_ids)

            cluster = Cluster(settings, db, broker, on_takeover=take_over)
            writer = Writer(
                db,
                broker,
                notify=cluster.notify if cluster.enabled else None,
                announce=cluster.announcement if cluster.enabled else None,
            )
            domain = Sessions.build(settings, db, writer, broker, agents, cluster, clock)
            async with anyio.create_task_group() as tg:
                tg.start_soon(writer.run)
                await tg.start(domain.run)
                await tg.start(cluster.run)
                await domain.start()
                if settings.auto_register_repos:
                    await auto_register(settings, db)
                revocations = Revocations()
                if cluster.enabled:
                    revocations.publish = cluster.publish_revocation
                    cluster.on_revoked = revocations.revoked_here
                users = Users(db, settings, revocations)
                tg.start_soon(users.sweep_removed)  # what the CLI removes closes its sockets
                app.state.agent_sessions = AppState(
                    settings, writer, broker, domain, agents, cluster, users, SignIns()
                )
                log.info("ready", extra={"event": "ready"})
                try:
                    yield
                finally:
                    await domain.shutdown()  # bounded: each agent's stop has a deadline
                    with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
                        await writer.drain()
                    tg.cancel_scope.cancel()
        finally:
            with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
                await db.close()

    routes = [
        *ops.routes,
        *users.routes,
        *repos.routes,
        *history.routes,
        *sessions.routes,
        *controls.routes,
        *client_tools.routes,
        *prompts.routes,
        *workspaces.routes,
        *review.routes,
        *runs.routes,
        *stats.routes,
        *glance.routes,
        *ws.routes,
        openapi_route(),
    ]
    if STATIC.is_dir():
        routes += ui_routes(STATIC)
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(RequestIdMiddleware),
            Middleware(SecurityHeadersMiddleware),
            Middleware(HostMiddleware, settings=settings),  # DNS rebinding: before anything
            Middleware(AuthMiddleware, settings=settings),  # who asks, and may they
            Middleware(OriginMiddleware, settings=settings),
            Middleware(BodyLimitMiddleware, settings=settings),
            Middleware(ForwardingMiddleware, settings=settings),  # commands for other nodes
        ],
        exception_handlers=exception_handlers,
        lifespan=lifespan,
    )
