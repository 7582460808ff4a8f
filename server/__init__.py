"""The HTTP and WebSocket edge of agent-sessions: ``create_app(settings)``."""

from server.app import create_app
from server.settings import Settings, SettingsError, load_settings

__all__ = ["Settings", "SettingsError", "create_app", "load_settings"]
