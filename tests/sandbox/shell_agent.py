"""A tiny ACP agent for the escape catalogue: each prompt's text is a shell command it
runs itself (not through the client's terminals), answering ``rc=<exit code>`` and the
output. ``!alloc MB`` makes the agent itself allocate (and touch) that much memory.
Standard library only: it runs inside the sandbox with the server's interpreter."""

import json
import subprocess
import sys


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def run(text: str) -> str:
    if text.startswith("!alloc "):
        hoard = bytearray(int(text.split()[1]) * 1024 * 1024)
        for i in range(0, len(hoard), 4096):
            hoard[i] = 1
        return f"rc=0\nallocated {len(hoard)}"
    done = subprocess.run(  # noqa: S602 - running what the test says is the point
        text, shell=True, capture_output=True, text=True, timeout=60, check=False
    )
    return f"rc={done.returncode}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        method, rid = request.get("method"), request.get("id")
        params = request.get("params") or {}
        if method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {"protocolVersion": 1, "agentCapabilities": {}},
                }
            )
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "shell"}})
        elif method == "session/prompt":
            text = "".join(b.get("text", "") for b in params.get("prompt", []))
            answer = run(text)
            update = {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": answer},
            }
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {"sessionId": "shell", "update": update},
                }
            )
            send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
        elif rid is not None:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {"code": -32601, "message": "Method not found"},
                }
            )


if __name__ == "__main__":
    main()
