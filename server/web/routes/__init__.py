"""Route tables, one module per resource; ``server.app`` composes them."""

__all__ = ["history", "ops", "repos", "runs", "sessions", "ws"]
