"""A scripted ACP agent for the hardening tests. Standard library only;
``python tests/hardening/numbers_agent.py DIR``.

A prompt whose first text block is a JSON object plays it:
``{"updates": [RAW...], "usage": RAW}``: each RAW is JSON text written as it is (so a test
can send numbers no encoder writes: ``1e999``, ``100000000000000000000``); each update is
sent as a ``session/update``, then the prompt is answered ``end_turn`` with ``usage``.
Any other prompt is answered ``end_turn`` with a short text chunk.

Every prompt's ``prompt`` blocks are appended as one JSON line to ``DIR/prompts.jsonl``.
``session/load`` and ``session/resume`` (advertised when ``DIR/load`` exists) answer
with the JSON-RPC error whose message is the text of ``DIR/load``, or succeed when it is
empty; ``session/new`` answers such an error with the text of ``DIR/new`` when it exists.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any


class Agent:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.session_id = ""

    def send_text(self, text: str) -> None:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_text(json.dumps({"jsonrpc": "2.0", **message}))

    def prompt(self, ident: Any, params: dict[str, Any]) -> None:
        blocks = params.get("prompt") or []
        with (self.folder / "prompts.jsonl").open("a") as log:
            log.write(json.dumps(blocks) + "\n")
        texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
        spec: dict[str, Any] = {}
        for text in texts:
            if text.startswith("{"):
                spec = json.loads(text)
                break
        for raw in spec.get("updates", []):
            self.send_text(
                '{"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": '
                + json.dumps(self.session_id)
                + ', "update": '
                + raw
                + "}}"
            )
        if not spec:
            chunk = {"type": "text", "text": "ok"}
            self.send(
                {
                    "method": "session/update",
                    "params": {
                        "sessionId": self.session_id,
                        "update": {"sessionUpdate": "agent_message_chunk", "content": chunk},
                    },
                }
            )
        usage = spec.get("usage", "null")
        self.send_text(
            '{"jsonrpc": "2.0", "id": '
            + json.dumps(ident)
            + ', "result": {"stopReason": "end_turn", "usage": '
            + usage
            + "}}"
        )

    def restore(self, ident: Any, params: dict[str, Any]) -> None:
        reason = (self.folder / "load").read_text().strip()
        if reason:
            self.send({"id": ident, "error": {"code": -32603, "message": reason}})
            return
        self.session_id = str(params.get("sessionId"))
        self.send({"id": ident, "result": {}})

    def serve(self) -> int:
        loads = (self.folder / "load").exists()
        for line in sys.stdin:
            message = json.loads(line)
            method, ident = message.get("method"), message.get("id")
            params = message.get("params") or {}
            if ident is None or method is None:
                continue
            if method == "initialize":
                capabilities = {
                    "loadSession": loads,
                    "promptCapabilities": {"image": True, "embeddedContext": True},
                }
                result = {"protocolVersion": 1, "agentCapabilities": capabilities}
                self.send({"id": ident, "result": {**result, "authMethods": []}})
            elif method == "session/new":
                refusal = self.folder / "new"
                if refusal.exists():
                    error = {"code": -32603, "message": refusal.read_text().strip()}
                    self.send({"id": ident, "error": error})
                    continue
                self.session_id = str(uuid.uuid4())
                self.send({"id": ident, "result": {"sessionId": self.session_id}})
            elif method in ("session/load", "session/resume") and loads:
                self.restore(ident, params)
            elif method == "session/prompt":
                self.prompt(ident, params)
            else:
                error = {"code": -32601, "message": f"Method not found: {method}"}
                self.send({"id": ident, "error": error})
        return 0


if __name__ == "__main__":
    sys.exit(Agent(Path(sys.argv[1])).serve())
