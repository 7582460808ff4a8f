"""Driving the raw agent (tests/fuzz/raw_agent.py) from tests: scripts, its command,
what it received, and the processes it left."""

from __future__ import annotations

import base64
import json
import shlex
import sys
from pathlib import Path
from typing import Any

RAW_AGENT = Path(__file__).with_name("raw_agent.py")


def write(data: bytes) -> dict[str, str]:
    return {"write": base64.b64encode(data).decode()}


def line(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"


def raw_agent(folder: Path, turns: list[list[dict[str, Any]]]) -> str:
    """Write the script into ``folder``; the AGENT_COMMAND that runs it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "script.json").write_text(json.dumps(turns))
    (folder / "received.log").write_bytes(b"")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(RAW_AGENT))} {shlex.quote(str(folder))}"


def received(folder: Path) -> list[dict[str, Any]]:
    """Every message the agent read from the server (the server only writes JSON)."""
    text = (folder / "received.log").read_bytes()
    return [json.loads(raw) for raw in text.splitlines() if raw.strip()]


def answers(folder: Path) -> list[dict[str, Any]]:
    return [m for m in received(folder) if "method" not in m]


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def pid_from(path: Path) -> int:
    return int(path.read_text())
