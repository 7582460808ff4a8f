"""The HTTP and WebSocket edge of agent-sessions."""
