"""Several server nodes on one PostgreSQL: leases, fan-out between nodes, forwarding."""

from server.cluster.node import (
    CHANNEL,
    FORWARDED,
    SECRET,
    Cluster,
    OwnerUnreachable,
    command_target,
)

__all__ = ["CHANNEL", "FORWARDED", "SECRET", "Cluster", "OwnerUnreachable", "command_target"]
