"""A live session's handshake with its agent: initialize → authenticate → session/new
(or session/load / session/resume to restore the agent's own earlier session), within
the start timeout; every way it can fail becomes one ``AgentStartError``."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from agent_bridge import AgentExited, AgentStartError, ProtocolBroken, RpcError
from server import metrics
from store import Database
from store import messages as message_store
from store import sessions as session_store

if TYPE_CHECKING:
    from server.sessions.live_session import LiveSession

__all__ = ["Restore", "handshake", "last_cost"]


@dataclass
class Restore:
    """How to bring an agent up: a fresh session, or the agent's own earlier one."""

    agent_session_id: str | None = None
    has_history: bool = False


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
    metrics.AGENT_START_SECONDS.observe(time.perf_counter() - started)
    async with services.db.write() as db, db.begin():
        await session_store.update_session(
            db, live.id, agent_session_id=client.session_id, needs_context=live.needs_context
        )


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
