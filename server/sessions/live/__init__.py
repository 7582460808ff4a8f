"""A live session (``session.LiveSession``): one agent process, and the members it has:
its turns (``turns``, each a ``turn``), its questions (``questions``: permission requests
and elicitations, one mechanism; ``pending``, ``permissions``, ``elicitations``), its
controls (``controls``, over ``controls_state``), its handshake, and the translation of
what the agent sends (``translate``, ``staging``). Nothing here sees the registry, the
supervisor or the facade."""

__all__ = [
    "controls",
    "controls_state",
    "elicitation_form",
    "elicitations",
    "handshake",
    "pending",
    "permissions",
    "prompt_content",
    "questions",
    "session",
    "staging",
    "translate",
    "turn",
    "turns",
]
