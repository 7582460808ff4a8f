"""MCP sessions of one tool server (one agent process): the ``Mcp-Session-Id`` each
``initialize`` makes, the protocol version agreed there, the requests in flight (so
``notifications/cancelled`` can end one), and the event streams (``GET``) that carry
``notifications/tools/list_changed``."""

from __future__ import annotations

import secrets

import anyio
import msgspec
import orjson
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from agent_bridge.jsonrpc import RequestId
from agent_bridge.jsontypes import JsonObject

__all__ = ["STREAM_BUFFER", "McpSession", "McpSessions"]

# Frames an event stream holds for a slow reader. Only list_changed travels there, and
# one of them says all that several do: a full stream drops the newer ones.
STREAM_BUFFER = 8


class McpSession(msgspec.Struct):
    id: str
    protocol_version: str
    inflight: dict[RequestId, anyio.CancelScope] = msgspec.field(default_factory=dict)
    streams: list[MemoryObjectSendStream[bytes]] = msgspec.field(default_factory=list)

    def cancel(self, request_id: RequestId) -> None:
        scope = self.inflight.get(request_id)
        if scope is not None:
            scope.cancel()

    def close(self) -> None:
        for scope in self.inflight.values():
            scope.cancel()
        for stream in self.streams:
            stream.close()
        self.streams.clear()


class McpSessions:
    def __init__(self) -> None:
        self._sessions: dict[str, McpSession] = {}
        self.closed = False

    def open(self, protocol_version: str) -> McpSession:
        session = McpSession(secrets.token_urlsafe(24), protocol_version)
        self._sessions[session.id] = session
        return session

    def get(self, session_id: str) -> McpSession | None:
        return self._sessions.get(session_id)

    def end(self, session_id: str) -> bool:
        session = self._sessions.pop(session_id, None)
        if session is None:
            return False
        session.close()
        return True

    def subscribe(self, session: McpSession) -> MemoryObjectReceiveStream[bytes]:
        """An event stream of ``session`` (closed at once when the server is closed)."""
        send, receive = anyio.create_memory_object_stream[bytes](STREAM_BUFFER)
        if self.closed:
            send.close()
        else:
            session.streams.append(send)
        return receive

    def unsubscribe(self, session: McpSession, stream: MemoryObjectReceiveStream[bytes]) -> None:
        stream.close()
        for send in [s for s in session.streams if not s.statistics().open_receive_streams]:
            send.close()
            session.streams.remove(send)

    def announce(self, message: JsonObject) -> int:
        """Send ``message`` on every open event stream; how many took it."""
        frame = orjson.dumps(message)
        sent = 0
        for session in self._sessions.values():
            for stream in list(session.streams):
                try:
                    stream.send_nowait(frame)
                    sent += 1
                except anyio.WouldBlock:
                    pass  # it holds a list_changed already: the same news
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    stream.close()
                    session.streams.remove(stream)
        return sent

    def close_all(self) -> None:
        self.closed = True
        for session in self._sessions.values():
            session.close()
        self._sessions.clear()
