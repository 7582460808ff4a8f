"""A scripted ACP agent that writes exactly the bytes a test gives it. Standard library
only; ``python tests/fuzz/raw_agent.py DIR``.

``initialize`` and ``session/new`` are answered normally. The n-th ``session/prompt``
runs turn n of ``DIR/script.json`` (a list of turns, each a list of steps; read at each
prompt, so a test may rewrite it between sessions), then answers
the prompt ``end_turn`` (unless a step hangs). Steps:

``{"write": B64}``      write these bytes to stdout as they are (any framing, any garbage).
``{"await": [ID...]}``  read stdin until an answer (a message without ``method``) has
                        come for each of these ids, as many as listed (JSON values
                        compared exactly).
``{"detach": PATH}``    start a process that calls setsid() and double-forks into the
                        background (stdout inherited), writes its pid to PATH, then
                        sleeps for ever.
``{"child": PATH}``     start a process in the agent's own process group, writes its pid
                        to PATH, then sleeps for ever.
``{"hang": true}``      stop reading and sleep for ever.
``{"exit": CODE}``      exit at once.

Every line read from stdin is appended to ``DIR/received.log`` as it came.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any


def key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


class Agent:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.log = (folder / "received.log").open("ab", buffering=0)
        self.turn = 0
        self.answered: list[str] = []

    def send(self, message: dict[str, Any]) -> None:
        sys.stdout.buffer.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        sys.stdout.buffer.flush()

    def read(self) -> dict[str, Any] | None:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        self.log.write(line)
        try:
            message = json.loads(line)
        except ValueError:
            return None
        if isinstance(message, dict) and "method" not in message:
            self.answered.append(key(message.get("id")))
            return None
        return message if isinstance(message, dict) else None

    def run_turn(self, steps: list[dict[str, Any]]) -> None:
        for step in steps:
            if "write" in step:
                sys.stdout.buffer.write(base64.b64decode(step["write"]))
                sys.stdout.buffer.flush()
            elif "await" in step:
                wanted = Counter(key(i) for i in step["await"])
                while any(self.answered.count(k) < n for k, n in wanted.items()):
                    self.read()
            elif "detach" in step:
                detach(step["detach"])
            elif "child" in step:
                child(step["child"])
            elif "hang" in step:
                while True:
                    time.sleep(3600)
            elif "exit" in step:
                os._exit(int(step["exit"]))

    def serve(self) -> None:
        while True:
            message = self.read()
            if message is None or "id" not in message:
                continue
            method, ident = message.get("method"), message["id"]
            if method == "initialize":
                capabilities = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
                self.send({"id": ident, "result": capabilities})
            elif method == "session/new":
                self.send({"id": ident, "result": {"sessionId": "raw"}})
            elif method == "session/prompt":
                script = json.loads((self.folder / "script.json").read_text())
                steps = script[self.turn] if self.turn < len(script) else []
                self.turn += 1
                self.run_turn(steps)
                self.send({"id": ident, "result": {"stopReason": "end_turn"}})
            else:
                self.send({"id": ident, "error": {"code": -32601, "message": "Method not found"}})


def child(pid_file: str) -> None:
    """A descendant that stays in the agent's process group."""
    if os.fork() == 0:
        Path(pid_file).write_text(str(os.getpid()))
        while True:
            time.sleep(3600)
    while not Path(pid_file).exists() or not Path(pid_file).read_text():  # noqa: ASYNC110
        time.sleep(0.005)


def detach(pid_file: str) -> None:
    """A descendant that leaves the agent's session and process group, as a daemon does."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            Path(pid_file).write_text(str(os.getpid()))
            while True:
                time.sleep(3600)
        os._exit(0)
    os.wait()
    while not Path(pid_file).exists() or not Path(pid_file).read_text():  # noqa: ASYNC110
        time.sleep(0.005)


if __name__ == "__main__":
    Agent(Path(sys.argv[1])).serve()
