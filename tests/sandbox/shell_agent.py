"""A tiny ACP agent for the escape catalogue: each prompt's text is a shell command it
runs itself (not through the client's terminals), answering ``rc=<exit code>`` and the
output. ``!alloc MB`` makes the agent itself allocate (and touch) that much memory;
``!term COMMAND`` runs the command in a client terminal (``terminal/*``) instead.
Standard library only: it runs inside the sandbox with the server's interpreter."""

import json
import subprocess
import sys


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def call(method: str, params: dict) -> dict:
    """A request to the client, answered before anything else arrives (one at a time)."""
    call.count = getattr(call, "count", 0) + 1  # type: ignore[attr-defined]
    rid = f"t{call.count}"  # type: ignore[attr-defined]
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("id") == rid and "method" not in message:
            return message.get("result") or {}
    return {}


def terminal(command: str) -> str:
    created = call(
        "terminal/create", {"sessionId": "shell", "command": "/bin/sh", "args": ["-c", command]}
    )
    ref = {"sessionId": "shell", "terminalId": created.get("terminalId")}
    status = call("terminal/wait_for_exit", ref)
    output = call("terminal/output", ref).get("output", "")
    call("terminal/release", ref)
    return f"rc={status.get('exitCode')}\n{output[-2000:]}"


def run(text: str) -> str:
    if text.startswith("!term "):
        return terminal(text[6:])
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
