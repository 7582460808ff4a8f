"""A minimal ACP agent for the usage tests: every prompt answers one text chunk and
returns ``usage`` in its result (the demo agent does not). Standard library only.

Turn n (1, 2, ...) reports usage {inputTokens: 100 n, outputTokens: 10 n,
totalTokens: 110 n}."""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def main() -> int:
    turns = 0
    for line in sys.stdin:
        message = json.loads(line)
        method, ident, params = message.get("method"), message.get("id"), message.get("params") or {}
        if ident is None or method is None:
            continue  # notifications (session/cancel) and answers
        if method == "initialize":
            send({"id": ident, "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
        elif method == "session/new":
            send({"id": ident, "result": {"sessionId": str(uuid.uuid4())}})
        elif method == "session/prompt":
            turns += 1
            chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": f"turn {turns}"}}
            send({"method": "session/update", "params": {"sessionId": params.get("sessionId"), "update": chunk}})
            usage = {"inputTokens": 100 * turns, "outputTokens": 10 * turns, "totalTokens": 110 * turns}
            send({"id": ident, "result": {"stopReason": "end_turn", "usage": usage}})
        else:
            send({"id": ident, "error": {"code": -32601, "message": f"Method not found: {method}"}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
