"""The session domain: the hub (registry and supervisor of live sessions), a live session
and its turns, translation of agent updates, transcripts, history, recovery and the idle sweep.
Imports no web framework."""

__all__ = [
    "agents",
    "archive",
    "errors",
    "history",
    "hub",
    "idle",
    "live_session",
    "recovery",
    "transcript",
    "translate",
    "turn",
]
