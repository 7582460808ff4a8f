"""The HTTP and WebSocket edge of agent-sessions: ``create_app(settings)``.

The names below load on first use (PEP 562), so ``import server.cli`` (the
``agent-sessions`` command, the terminal client) does not import the whole server
before it knows what it will run: ``serve`` imports it with the cyclic GC paused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from server.app import create_app
    from server.settings import Settings, SettingsError, load_settings

__all__ = ["Settings", "SettingsError", "create_app", "load_settings"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from server import app

        return app.create_app
    if name in ("Settings", "SettingsError", "load_settings"):
        from server import settings

        return getattr(settings, name)
    raise AttributeError(f"module 'server' has no attribute {name!r}")
