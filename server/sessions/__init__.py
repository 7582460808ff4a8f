"""The session domain: the hub (registry and supervisor of live sessions), a live session
and its turns, translation of agent updates, transcripts, history, recovery and the idle sweep.
Imports no web framework."""

__all__ = [
    "admission",
    "agents",
    "archive",
    "errors",
    "handshake",
    "history",
    "hub",
    "idle",
    "live_base",
    "live_session",
    "permission_gate",
    "recovery",
    "services",
    "status",
    "supervision",
    "transcript",
    "translate",
    "turn",
    "turn_runner",
]
