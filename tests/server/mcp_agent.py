"""A scripted ACP agent for the MCP server tests: it writes every session/new, load and
resume's ``mcpServers`` to ``MCP_AGENT_LOG`` (one JSON line each, with the pids of the
stdio servers it started) and starts each stdio server as its own child, as real
adapters do. ``MCP_AGENT_CAPS`` (e.g. ``http,sse``) is its ``mcpCapabilities``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from typing import Any

children: list[subprocess.Popen[bytes]] = []


def start_servers(servers: list[dict[str, Any]]) -> list[int]:
    pids = []
    for server in servers:
        if "command" in server:
            env = {**os.environ, **{e["name"]: e["value"] for e in server["env"]}}
            child = subprocess.Popen(
                [server["command"], *server["args"]], env=env, stdin=subprocess.PIPE
            )
            children.append(child)
            pids.append(child.pid)
    return pids


def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "initialize":
        caps = [c for c in os.environ.get("MCP_AGENT_CAPS", "").split(",") if c]
        return {
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": True,
                "mcpCapabilities": {c: True for c in caps},
            },
            "authMethods": [],
        }
    if method in ("session/new", "session/load", "session/resume"):
        servers = params.get("mcpServers") or []
        pids = start_servers(servers)
        with open(os.environ["MCP_AGENT_LOG"], "a") as log:
            log.write(json.dumps({"method": method, "mcpServers": servers, "pids": pids}) + "\n")
        return {"sessionId": str(uuid.uuid4())} if method == "session/new" else {}
    if method == "session/prompt":
        return {"stopReason": "end_turn"}
    return {}


def main() -> None:
    for line in sys.stdin:
        frame = json.loads(line)
        if "id" not in frame or "method" not in frame:
            continue
        reply = {
            "jsonrpc": "2.0",
            "id": frame["id"],
            "result": answer(frame["method"], frame.get("params") or {}),
        }
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
