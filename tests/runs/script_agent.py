"""A small scripted ACP agent for tests the demo agent cannot drive. Standard library
only; ``python tests/runs/script_agent.py``.

Every prompt returns ``usage`` in its result: turn n (1, 2, ...) reports
{inputTokens: 100 n, outputTokens: 10 n, totalTokens: 110 n}. The prompt text selects:

``gated B K``  B batches; each makes K tool calls ``b<i>_<j>`` (pending, in_progress,
    completed with rawOutput {i, j}), then a tool call ``gate_<i>`` that asks permission
    and completes once answered: a test decides when the next batch starts. A cancelled
    permission (or ``session/cancel``) ends the turn with stopReason cancelled.
anything else  one text chunk ``turn n``.
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]


class Cancelled(Exception):
    pass


class Agent:
    def __init__(self) -> None:
        self.turns = 0
        self.next_id = 0
        self.session_id = ""

    def send(self, message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        sys.stdout.flush()

    def update(self, update: dict[str, Any]) -> None:
        self.send(
            {"method": "session/update", "params": {"sessionId": self.session_id, "update": update}}
        )

    def tool(self, call_id: str, **fields: Any) -> None:
        kind = "tool_call" if fields.get("status") == "pending" else "tool_call_update"
        self.update({"sessionUpdate": kind, "toolCallId": call_id, **fields})

    def ask(self, call_id: str) -> str:
        """Ask permission and read stdin until the answer (or a cancel) comes."""
        self.next_id += 1
        ident = self.next_id
        tool_call = {
            "toolCallId": call_id,
            "title": f"Gate {call_id}",
            "kind": "execute",
            "status": "pending",
        }
        self.send(
            {
                "id": ident,
                "method": "session/request_permission",
                "params": {"sessionId": self.session_id, "toolCall": tool_call, "options": OPTIONS},
            }
        )
        for line in sys.stdin:
            message = json.loads(line)
            if message.get("method") == "session/cancel":
                raise Cancelled
            if message.get("id") == ident and "method" not in message:
                outcome = (message.get("result") or {}).get("outcome") or {}
                if outcome.get("outcome") != "selected":
                    raise Cancelled
                return str(outcome.get("optionId"))
        raise SystemExit(0)

    def gated(self, batches: int, size: int) -> None:
        for i in range(1, batches + 1):
            for j in range(1, size + 1):
                call_id = f"b{i}_{j}"
                self.tool(
                    call_id,
                    status="pending",
                    title=f"Batch {i}",
                    kind="read",
                    rawInput={"i": i, "j": j},
                )
                self.tool(call_id, status="in_progress")
                self.tool(call_id, status="completed", rawOutput={"i": i, "j": j})
            gate = f"gate_{i}"
            self.tool(gate, status="pending", title="Gate", kind="execute", rawInput={"i": i})
            self.ask(gate)
            self.tool(gate, status="completed", rawOutput={"i": i})

    def prompt(self, ident: Any, params: dict[str, Any]) -> None:
        self.turns += 1
        n = self.turns
        text = " ".join(
            b.get("text", "") for b in params.get("prompt") or [] if isinstance(b, dict)
        ).split()
        stop = "end_turn"
        try:
            if len(text) == 3 and text[0] == "gated":
                self.gated(int(text[1]), int(text[2]))
        except Cancelled:
            stop = "cancelled"
        self.update(
            {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": f"turn {n}"},
            }
        )
        usage = {"inputTokens": 100 * n, "outputTokens": 10 * n, "totalTokens": 110 * n}
        self.send({"id": ident, "result": {"stopReason": stop, "usage": usage}})

    def serve(self) -> int:
        for line in sys.stdin:
            message = json.loads(line)
            method, ident, params = (
                message.get("method"),
                message.get("id"),
                message.get("params") or {},
            )
            if ident is None or method is None:
                continue  # notifications and stray answers
            if method == "initialize":
                self.send(
                    {
                        "id": ident,
                        "result": {
                            "protocolVersion": 1,
                            "agentCapabilities": {},
                            "authMethods": [],
                        },
                    }
                )
            elif method == "session/new":
                self.session_id = str(uuid.uuid4())
                self.send({"id": ident, "result": {"sessionId": self.session_id}})
            elif method == "session/prompt":
                self.prompt(ident, params)
            else:
                self.send(
                    {
                        "id": ident,
                        "error": {"code": -32601, "message": f"Method not found: {method}"},
                    }
                )
        return 0


if __name__ == "__main__":
    sys.exit(Agent().serve())
