"""A live session (``session.LiveSession``): one agent process, and the members it has:
its turns (``turns``, each a ``turn``), its questions (``questions``: permission requests
and elicitations, one mechanism; ``pending``, ``permissions``, ``elicitations``), its
controls (``controls``, over ``controls_state``), its handshake, and the translation of
what the agent sends (``translate``, ``staging``); the stored conversation as the
transcript a rebuilt agent is handed (``transcript``), and the raw prompt frame a user
message keeps (``prompt_frame``). Nothing here sees the registry, the supervisor, the
history or the facade."""

__all__ = [
    "controls",
    "controls_state",
    "elicitation_form",
    "elicitations",
    "handshake",
    "pending",
    "permissions",
    "prompt_content",
    "prompt_frame",
    "questions",
    "session",
    "staging",
    "transcript",
    "translate",
    "turn",
    "turns",
]
