"""The terminal client: speaks only HTTP and WebSocket to a server, and imports nothing
from the server's internals."""

__all__ = ["api", "chat", "main"]
