"""What a live session is given at construction: the server's services (settings, the
database, the writer, the cluster), frozen, so that it never reaches back into the hub;
and how long a shielded cleanup may take before it is abandoned."""

from __future__ import annotations

from dataclasses import dataclass

from server.cluster import Cluster
from server.settings import Settings
from server.stream.writer import Writer
from store import Database

__all__ = ["CLEANUP_SECONDS", "Services"]

# A shielded cleanup (a status commit, a lease release, closing an agent's terminals)
# runs through cancellation, but not forever: a hung database or agent must not make
# shutdown or a request hang. Generous: a healthy cleanup takes milliseconds.
CLEANUP_SECONDS = 15.0


@dataclass(frozen=True)
class Services:
    settings: Settings
    db: Database
    writer: Writer
    cluster: Cluster
