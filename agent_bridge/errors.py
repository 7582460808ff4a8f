"""The bridge's exception hierarchy. ``server/web/errors.py`` maps these to HTTP statuses."""

from __future__ import annotations

from typing import Any

__all__ = ["AgentExited", "AgentStartError", "BridgeError", "ProtocolBroken", "RpcError"]


class BridgeError(Exception):
    """Base of every error raised by agent_bridge."""


class RpcError(BridgeError):
    """A JSON-RPC error: raised by handlers to answer the agent, or received from it."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data


class AgentExited(BridgeError):
    """The agent process is gone (exited, crashed or was stopped)."""

    def __init__(self, exit_code: int | None, stderr_tail: str) -> None:
        super().__init__(f"agent exited with code {exit_code}")
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail


class ProtocolBroken(BridgeError):
    """The agent broke the framing (a line over the limit); the connection is closed."""


class AgentStartError(BridgeError):
    """The agent could not be started: spawn failed, it exited, timed out or answered an
    error to ``initialize``/``authenticate``/``session/new``."""

    def __init__(self, reason: str, exit_code: int | None = None, stderr_tail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail

    def last_stderr_lines(self, count: int = 5, width: int = 300) -> list[str]:
        """The agent's last ``count`` non-blank stderr lines, each clipped to ``width``."""
        lines = [line.rstrip() for line in self.stderr_tail.splitlines() if line.strip()]
        return [line[:width] for line in lines[-count:]]

    def describe(self) -> str:
        """One message for a person: why, the exit code and what the agent last said."""
        text = f"The agent could not start: {self.reason}"
        if self.exit_code is not None and f"code {self.exit_code}" not in self.reason:
            text += f" (exit code {self.exit_code})"
        lines = self.last_stderr_lines()
        if lines:
            return text + ". Its last stderr lines:\n" + "\n".join(lines)
        return text + ". It wrote nothing to stderr."
