"""Talking to ACP agent processes: the sans-I/O JSON-RPC core, the anyio driver, the
process and its escalating stop, the ACP client and its workspace confinement.

Imports neither ``server`` nor ``store``.
"""

from agent_bridge.acp import PROTOCOL_VERSION, AcpClient, ClientCallbacks
from agent_bridge.cgroups import AgentCgroups
from agent_bridge.connection import AgentConnection, AgentHandler, connect_agent
from agent_bridge.errors import AgentExited, AgentStartError, BridgeError, ProtocolBroken, RpcError
from agent_bridge.orphans import SESSION_ENV, OrphanSweeper, kill_orphans, owner_marker
from agent_bridge.process import (
    AgentProcess,
    ProcessSpec,
    agent_environment,
    become_subreaper,
    tracked_children,
)
from agent_bridge.terminals import OutputBuffer, TerminalHost
from agent_bridge.workspace import PathOutsideWorkspace, Workspace, WorkspaceError

__all__ = [
    "SESSION_ENV",
    "PROTOCOL_VERSION",
    "AcpClient",
    "AgentCgroups",
    "AgentConnection",
    "AgentExited",
    "AgentHandler",
    "AgentProcess",
    "AgentStartError",
    "BridgeError",
    "ClientCallbacks",
    "OrphanSweeper",
    "OutputBuffer",
    "PathOutsideWorkspace",
    "ProcessSpec",
    "ProtocolBroken",
    "RpcError",
    "TerminalHost",
    "Workspace",
    "WorkspaceError",
    "agent_environment",
    "become_subreaper",
    "connect_agent",
    "kill_orphans",
    "owner_marker",
    "tracked_children",
]
