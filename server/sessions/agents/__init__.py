"""The agents a session can run: their configuration (``config``, from AGENTS_FILE or
AGENT_COMMAND) and the MCP servers they are given (``mcp_servers``; a create request's
choice of them, ``mcp_create``)."""

__all__ = ["config", "mcp_create", "mcp_servers"]
