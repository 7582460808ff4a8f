"""An agent that forgets its session: when ``session/load`` or ``session/resume`` of the
agent's own earlier session is refused (gemini-cli sometimes overwrites its saved session
before reading it back: "No previous sessions found"), the session is not lost. The agent
gets a fresh ``session/new`` and, on the next prompt, the stored transcript (as rewind and
import do); a ``status`` message says its memory was rebuilt, with the agent's reason.

Every refusal that still ends the start (a 502) keeps the agent's own JSON-RPC error, in
the message and in ``details.agentError``.
"""

from __future__ import annotations

import logging

from agent_bridge import AcpClient, AgentStartError, RpcError
from agent_bridge.jsontypes import JsonObject
from server.contents import StatusContent, as_json
from server.stream.writer import Draft, Writer

__all__ = ["REASON", "AgentRefused", "memory_rebuilt", "restore_or_new"]

log = logging.getLogger("agent_sessions.sessions")

REASON = "agent_memory_rebuilt"


class AgentRefused(AgentStartError):
    """The agent answered a step of its start with a JSON-RPC error."""

    def __init__(
        self,
        step: str,
        error: RpcError,
        exit_code: int | None,
        stderr_tail: str,
        forgotten: JsonObject | None = None,
    ) -> None:
        hint = (
            " (it requires authentication: set authMethod for this agent in AGENTS_FILE)"
            if error.code == -32000 and forgotten is None
            else ""
        )
        reason = f"the agent answered {step} with error {error.code}: {error.message}{hint}"
        if forgotten is not None:
            reason += (
                f", after {forgotten['method']} was refused with error {forgotten['code']}: "
                f"{forgotten['message']}"
            )
        super().__init__(reason, exit_code, stderr_tail)
        self.agent_error: JsonObject = _refusal(step, error)
        self.forgotten = forgotten


def _refusal(step: str, error: RpcError) -> JsonObject:
    return {"method": step, "code": error.code, "message": error.message}


async def restore_or_new(
    session_id: str, client: AcpClient, agent_session_id: str
) -> JsonObject | None:
    """Load (or resume) the agent's earlier session; when the agent refuses, start a new
    one (the caller hands it the transcript). Returns the refusal, or None."""
    step = "session/load" if client.can_load else "session/resume"
    try:
        if client.can_load:
            await client.load_session(agent_session_id)
        else:
            await client.resume_session(agent_session_id)
        return None
    except RpcError as exc:
        refusal = _refusal(step, exc)
    log.warning(
        "the agent refused to restore its session (%s: %s); starting a new one with the "
        "stored transcript",
        step,
        refusal["message"],
        extra={"session_id": session_id, "event": REASON},
    )
    try:
        await client.new_session()
    except RpcError as exc:
        conn = client.connection
        raise AgentRefused(
            "session/new", exc, conn.exit_code, conn.stderr_tail, forgotten=refusal
        ) from None
    return refusal


def memory_rebuilt(session_id: str, client: AcpClient, writer: Writer, refusal: JsonObject) -> None:
    """Store the status message that says so (the session stays ``active``)."""
    content: StatusContent = {
        "type": "status",
        "status": "active",
        "reason": REASON,
        "detail": {"refused": refusal, "agentSessionId": client.session_id},
    }
    writer.submit(session_id, [Draft("system", as_json(content))])
