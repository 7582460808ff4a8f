"""What a live session is given at construction: the server's services (settings, the
database, the writer, the cluster, the clock durations are measured on), frozen, so that
it never reaches back into the facade, the supervisor or the registry.
``CLEANUP_SECONDS`` (from settings) bounds every shielded cleanup."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from agent_bridge import AgentCgroups
from server.cluster import Cluster
from server.settings import CLEANUP_SECONDS, Settings
from server.stream.writer import Writer
from store import Database

if TYPE_CHECKING:
    from server.sandbox import SandboxHost

__all__ = ["CLEANUP_SECONDS", "Services"]


class Services(msgspec.Struct, frozen=True):
    settings: Settings
    db: Database
    writer: Writer
    cluster: Cluster
    clock: Callable[[], float] = time.monotonic  # durations of turns and tool calls
    cgroups: AgentCgroups | None = None  # where agents' cgroups are made (none: None)
    sandbox: SandboxHost | None = None  # the agents' walls (none: agents run without)
