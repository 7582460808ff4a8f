"""A live session's handshake with its agent: initialize → authenticate → session/new
(or session/load / session/resume to restore the agent's own earlier session), within
the start timeout; every way it can fail becomes one ``AgentStartError``."""

from __future__ import annotations

import logging
import time

import anyio
import msgspec

from agent_bridge import AcpClient, AgentExited, AgentStartError, ProtocolBroken, RpcError
from agent_bridge.jsontypes import JsonObject
from server import metrics
from server.sessions.agents.config import AgentConfig
from server.sessions.agents.mcp_servers import session_servers, transport_allowed
from server.sessions.live.agent_memory import AgentRefused, memory_rebuilt, restore_or_new
from server.sessions.live.client_tools import ClientToolHost
from server.sessions.live.controls import Controls
from server.sessions.services import Services
from store import Database
from store import messages as message_store
from store import sessions as session_store

__all__ = ["Restore", "Started", "choose_mcp_servers", "handshake", "last_cost"]

log = logging.getLogger("agent_sessions.sessions")


class Restore(msgspec.Struct):
    """How to bring an agent up: a fresh session, or the agent's own earlier one."""

    agent_session_id: str | None = None
    has_history: bool = False
    mcp_servers: tuple[str, ...] = ()  # MCP servers a new session adds, by name


class Started(msgspec.Struct):
    """What the handshake learned: whether the next prompt must hand the agent the stored
    transcript, the agent's cost so far (None: a fresh session, nothing to restore), and
    the MCP servers it could not take."""

    needs_context: bool
    cost_seen: float | None = None
    mcp_refused: list[str] = msgspec.field(default_factory=list)


async def handshake(
    session_id: str,
    client: AcpClient,
    services: Services,
    agent: AgentConfig,
    controls: Controls,
    client_tools: ClientToolHost,
    restore: Restore,
    needs_context: bool,
) -> Started:
    """Open the agent's session and store its id (and whether the next prompt must hand
    the agent the stored transcript)."""
    started_state = Started(needs_context)
    timeout, step = services.settings.agent_start_timeout, "initialize"
    started = time.perf_counter()
    forgotten: JsonObject | None = None  # the agent's refusal to restore its session
    try:
        with anyio.fail_after(timeout):
            await client.initialize()
            if agent.auth_method and client.auth_method_ids:
                step = "authenticate"
                await client.authenticate(agent.auth_method)
            started_state.mcp_refused = choose_mcp_servers(
                session_id, agent, client, controls, restore.mcp_servers
            )
            client_tools.offer(client, controls.state)
            step = "session/new"
            if restore.agent_session_id and (client.can_load or client.can_resume):
                step = "session/load" if client.can_load else "session/resume"
                forgotten = await restore_or_new(session_id, client, restore.agent_session_id)
                if forgotten is None:
                    started_state.cost_seen = await last_cost(services.db, session_id)
                else:  # a new session of the agent's: it gets the stored transcript
                    started_state.needs_context = True
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
        raise AgentRefused(step, exc, conn.exit_code, conn.stderr_tail) from None
    await controls.after_start()  # the agent's controls; what the session kept, re-applied
    metrics.observe_agent_start(time.perf_counter() - started)
    async with services.db.write() as db, db.begin():
        await session_store.update_session(
            db,
            session_id,
            agent_session_id=client.session_id,
            needs_context=started_state.needs_context,
            controls=controls.state.view(),
        )
    if forgotten is not None:
        memory_rebuilt(session_id, client, services.writer, forgotten)
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
    names = [n for n in state.mcp_servers if isinstance(n, str)]  # client-tools: its own
    servers = session_servers(agent.mcp_catalog, agent.mcp_servers, [*names, *added])
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
