"""A live session's handshake with its agent: initialize → authenticate → session/new
(or session/load / session/resume to restore the agent's own earlier session), within
the start timeout; every way it can fail becomes one ``AgentStartError``."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import anyio

from agent_bridge import AcpClient, AgentExited, AgentStartError, ProtocolBroken, RpcError
from server import metrics
from server.sessions.agents.config import AgentConfig
from server.sessions.agents.mcp_servers import session_servers, transport_allowed
from server.sessions.live.controls import Controls
from server.sessions.services import Services
from store import Database
from store import messages as message_store
from store import sessions as session_store

__all__ = ["Restore", "Started", "choose_mcp_servers", "handshake", "last_cost"]

log = logging.getLogger("agent_sessions.sessions")


@dataclass
class Restore:
    """How to bring an agent up: a fresh session, or the agent's own earlier one."""

    agent_session_id: str | None = None
    has_history: bool = False
    mcp_servers: tuple[str, ...] = ()  # MCP servers a new session adds, by name


@dataclass
class Started:
    """What the handshake learned: whether the next prompt must hand the agent the stored
    transcript, the agent's cost so far (None: a fresh session, nothing to restore), and
    the MCP servers it could not take."""

    needs_context: bool
    cost_seen: float | None = None
    mcp_refused: list[str] = field(default_factory=list)


async def handshake(
    session_id: str,
    client: AcpClient,
    services: Services,
    agent: AgentConfig,
    controls: Controls,
    restore: Restore,
    needs_context: bool,
) -> Started:
    """Open the agent's session and store its id (and whether the next prompt must hand
    the agent the stored transcript)."""
    started_state = Started(needs_context)
    timeout, step = services.settings.agent_start_timeout, "initialize"
    started = time.perf_counter()
    try:
        with anyio.fail_after(timeout):
            await client.initialize()
            if agent.auth_method and client.auth_method_ids:
                step = "authenticate"
                await client.authenticate(agent.auth_method)
            started_state.mcp_refused = choose_mcp_servers(
                session_id, agent, client, controls, restore.mcp_servers
            )
            step = "session/new"
            if restore.agent_session_id and client.can_load:
                step = "session/load"
                await client.load_session(restore.agent_session_id)
                started_state.cost_seen = await last_cost(services.db, session_id)
            elif restore.agent_session_id and client.can_resume:
                step = "session/resume"
                await client.resume_session(restore.agent_session_id)
                started_state.cost_seen = await last_cost(services.db, session_id)
            else:
                await client.new_session()
                started_state.needs_context = needs_context or restore.has_history
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
    await controls.after_start()  # the agent's controls; what the session kept, re-applied
    metrics.AGENT_START_SECONDS.observe(time.perf_counter() - started)
    async with services.db.write() as db, db.begin():
        await session_store.update_session(
            db,
            session_id,
            agent_session_id=client.session_id,
            needs_context=started_state.needs_context,
            controls=controls.state.view(),
        )
    return started_state


def choose_mcp_servers(
    session_id: str,
    agent: AgentConfig,
    client: AcpClient,
    controls: Controls,
    added: tuple[str, ...] = (),
) -> list[str]:
    """The agent's default MCP servers and the session's own, as ACP wants them; an
    ``http``/``sse`` one the agent cannot take is left out and named in what this returns
    (create refuses the session with it)."""
    state = controls.state
    servers = session_servers(agent.mcp_catalog, agent.mcp_servers, [*state.mcp_servers, *added])
    caps = client.agent_capabilities
    allowed = [s for s in servers if transport_allowed(s, caps)]
    refused = [s.name for s in servers if s not in allowed]
    if refused:
        log.warning(
            "MCP servers left out: the agent takes no %s",
            "/".join(sorted({s.transport for s in servers if s not in allowed})),
            extra={"session_id": session_id, "mcp_servers": refused},
        )
    state.mcp_servers = [s.name for s in allowed]
    client.mcp_servers = [s.acp() for s in allowed]
    return refused


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
