"""The agent sandbox on the server's side (API.md "Agent sandbox"): whether bubblewrap
works here (``probe``), each agent's additions from ``AGENTS_FILE`` (``config``), the
policy of each session's agent (``host``) and the egress proxy of ``AGENT_NETWORK=proxy``
(``egress``). The wall itself is built by ``agent_bridge.sandbox``."""

from server.sandbox.config import AgentSandbox, parse_agent
from server.sandbox.egress import EgressProxy, host_allowed
from server.sandbox.host import SandboxHost, data_directory
from server.sandbox.probe import probe_bwrap

__all__ = [
    "AgentSandbox",
    "EgressProxy",
    "SandboxHost",
    "data_directory",
    "host_allowed",
    "parse_agent",
    "probe_bwrap",
]
