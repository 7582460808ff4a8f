"""A live session's handshake with its agent: initialize → authenticate → session/new
(or session/load / session/resume to restore the agent's own earlier session), within
the start timeout; every way it can fail becomes one ``AgentStartError``."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from agent_bridge import AgentExited, AgentStartError, ProtocolBroken, RpcError
from server import metrics
from server.sessions.agent_controls import after_start
from server.sessions.mcp_servers import session_servers, transport_allowed
from store import Database
from store import messages as message_store
from store import sessions as session_store

if TYPE_CHECKING:
    from server.sessions.live_session import LiveSession

__all__ = ["Restore", "choose_mcp_servers", "handshake", "last_cost"]

log = logging.getLogger("agent_sessions.sessions")


@dataclass
class Restore:
    """How to bring an agent up: a fresh session, or the agent's own earlier one."""

    agent_session_id: str | None = None
    has_history: bool = False
    mcp_servers: tuple[str, ...] = ()  # MCP servers a new session adds, by name


async def handshake(live: LiveSession, restore: Restore) -> None:
    """Open the agent's session and store its id (and whether the next prompt must hand
    the agent the stored transcript)."""
    client, services = live.client, live.services
    timeout, step = services.settings.agent_start_timeout, "initialize"
    started = time.perf_counter()
    try:
        with anyio.fail_after(timeout):
            await client.initialize()
            if live.agent.auth_method and client.auth_method_ids:
                step = "authenticate"
                await client.authenticate(live.agent.auth_method)
            choose_mcp_servers(live, restore.mcp_servers)
            live.client_tools.offer(client, live.translator.controls)
            step = "session/new"
            if restore.agent_session_id and client.can_load:
                step = "session/load"
                await client.load_session(restore.agent_session_id)
                live.cost_seen = await last_cost(services.db, live.id)
            elif restore.agent_session_id and client.can_resume:
                step = "session/resume"
                await client.resume_session(restore.agent_session_id)
                live.cost_seen = await last_cost(services.db, live.id)
            else:
                await client.new_session()
                live.needs_context = live.needs_context or restore.has_history
    except TimeoutError:
        conn = client.connection
        raise AgentStartError(
            f"the agent did not answer {step} within {timeout:g} s",
            conn.exit_code,
            conn.stderr_tail,
        ) from None
    except (AgentExited, ProtocolBroken):
        conn = client.connection
        with anyio.move_on_after(2):
            await conn.exited.wait()
        raise AgentStartError(
            f"the agent exited during {step} with code {conn.exit_code}",
            conn.exit_code,
            conn.stderr_tail,
        ) from None
    except RpcError as exc:
        conn = client.connection
        hint = (
            " (it requires authentication: set authMethod for this agent in AGENTS_FILE)"
            if exc.code == -32000
            else ""
        )
        raise AgentStartError(
            f"the agent answered {step} with error {exc.code}: {exc.message}{hint}",
            conn.exit_code,
            conn.stderr_tail,
        ) from None
    await after_start(live)  # the agent's controls; what the session kept, re-applied
    metrics.AGENT_START_SECONDS.observe(time.perf_counter() - started)
    async with services.db.write() as db, db.begin():
        await session_store.update_session(
            db,
            live.id,
            agent_session_id=client.session_id,
            needs_context=live.needs_context,
            controls=live.translator.controls.view(),
        )


def choose_mcp_servers(live: LiveSession, added: tuple[str, ...] = ()) -> None:
    """The agent's default MCP servers and the session's own, as ACP wants them; an
    ``http``/``sse`` one the agent cannot take is left out and named in
    ``live.mcp_refused`` (create refuses the session with it)."""
    controls = live.translator.controls
    servers = session_servers(
        live.agent.mcp_catalog,
        live.agent.mcp_servers,
        [*(n for n in controls.mcp_servers if isinstance(n, str)), *added],
    )
    caps = live.client.agent_capabilities
    allowed = [s for s in servers if transport_allowed(s, caps)]
    live.mcp_refused = [s.name for s in servers if s not in allowed]
    if live.mcp_refused:
        log.warning(
            "MCP servers left out: the agent takes no %s",
            "/".join(sorted({s.transport for s in servers if s not in allowed})),
            extra={"session_id": live.id, "mcp_servers": live.mcp_refused},
        )
    controls.mcp_servers = [s.name for s in allowed]
    live.client.mcp_servers = [s.acp() for s in allowed]


async def last_cost(database: Database, session_id: str) -> float:
    """The agent's cumulative cost as last reported (an agent restored with its own
    session keeps counting from there)."""
    async with database.read() as db:
        usage = await message_store.last_of_type(db, session_id, "usage")
    cost = usage.content.get("cost") if usage is not None else None
    amount = cost.get("amount") if isinstance(cost, dict) else None
    return (
        float(amount) if isinstance(amount, int | float) and not isinstance(amount, bool) else 0.0
    )
