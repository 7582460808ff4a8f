"""``scripts/soak``: a long mixed load against one real server, its RSS once a minute.

The load, bounded: ``--workers`` threads, each in a loop: create a session (against a
limit of ``--workers`` - 2 active sessions, so some creates are refused 429 and retried),
watch it with a WebSocket viewer (every third one reads slowly and is let go with 4008,
then resumes by cursor), prompt it (a flood of 300 tool updates, 2 000 text chunks or the
default turn), now and then cancel a turn, read its history and stats, and complete it. No
sessions are deleted: the database grows, as a server's does.

Once a minute: minutes, the server's RSS (MiB), sessions done, messages stored, refusals.
After the load, ``--idle-minutes`` with nothing happening. The summary: RSS at start,
after the first minute, at the load's end and idle at the end, and the slope over the
load's second half (MiB a minute): near 0 when memory levels off.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from benchlib.procs import Server, Tracker, http_json, rss_kib

PROMPTS = ("flood 300 tool", "flood 2000 text", "hello", "flood 300 tool rate=2000")


@dataclass
class Tally:
    sessions: int = 0
    refused: int = 0
    errors: int = 0
    let_go: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    first_errors: list[str] = field(default_factory=list)

    def add(self, name: str) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + 1)

    def error(self, what: str, status: int, body: Any) -> None:
        """An answer the load did not expect (the first few are kept for the summary)."""
        self.add("errors")
        with self.lock:
            if len(self.first_errors) < 5:
                self.first_errors.append(f"{what}: {status} {str(body)[:200]}")


def _view(server: Server, session_id: str, slow: bool, tally: Tally, stop: threading.Event) -> None:
    """A viewer until the session ends (or the load stops); resumes by cursor after 4008."""
    after = 0
    while not stop.is_set():
        url = f"{server.ws_url}/ws/sessions/{session_id}?after={after}"
        try:
            with connect(url, origin=server.url, max_queue=4, open_timeout=30) as ws:
                while not stop.is_set():
                    frame = json.loads(ws.recv(timeout=30))
                    if frame["type"] == "message":
                        after = frame["message"]["seq"]
                        content = frame["message"]["content"]
                        if content["type"] == "status" and content["status"] != "active":
                            return
                    if slow:
                        time.sleep(0.002)
        except ConnectionClosed as closed:
            if closed.rcvd is not None and closed.rcvd.code == 4008:
                tally.add("let_go")
                continue
            return
        except (TimeoutError, OSError):
            return


def _worker(server: Server, repo_id: str, n: int, tally: Tally, stop: threading.Event) -> None:
    rng = random.Random(n)  # noqa: S311 - a load mix, not a secret
    turn = 0
    while not stop.is_set():
        status, body = http_json(server.url, "POST", "/api/sessions", {"repoId": repo_id})
        if status == 429:
            tally.add("refused")
            stop.wait(0.5)
            continue
        if status != 201:
            tally.error("create", status, body)
            stop.wait(1)
            continue
        session_id = body["id"]
        turn += 1
        viewer = threading.Thread(
            target=_view, args=(server, session_id, turn % 3 == 0, tally, stop), daemon=True
        )
        viewer.start()
        for _ in range(rng.randint(1, 3)):
            status, run = http_json(
                server.url,
                "POST",
                f"/api/sessions/{session_id}/prompt",
                {"text": rng.choice(PROMPTS)},
            )
            if status == 409:  # a cancelled turn still ending: the next prompt waits for it
                stop.wait(0.2)
                continue
            if status != 202:
                tally.error("prompt", status, run)
                break
            if rng.random() < 0.2:
                http_json(server.url, "POST", f"/api/sessions/{session_id}/cancel")
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not stop.is_set():
                _, state = http_json(server.url, "GET", f"/api/agent-runs/{run['runId']}")
                if state and state.get("status") not in ("running", "queued"):
                    break
                stop.wait(0.1)
        http_json(server.url, "GET", f"/api/sessions/{session_id}/messages?limit=500")
        http_json(server.url, "GET", "/api/stats?groupBy=status")
        http_json(server.url, "POST", f"/api/sessions/{session_id}/complete")
        viewer.join(30)
        tally.add("sessions")


def _messages(server: Server) -> int:
    """Messages stored since the server started (its counter, all types)."""
    return sum(
        int(float(line.split()[-1]))
        for line in server.metrics_text().splitlines()
        if line.startswith("agent_sessions_messages_stored_total{")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--idle-minutes", type=float, default=3.0)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a variable for the server (e.g. MALLOC_TRIM_THRESHOLD_=131072); repeatable",
    )
    args = parser.parse_args(argv)
    extra = dict(item.split("=", 1) for item in args.env)
    tracker = Tracker()
    workdir = Path(tempfile.mkdtemp(prefix="agent-sessions-soak-"))
    server = Server.start(
        tracker,
        workdir,
        env={
            "MAX_CONCURRENT_SESSIONS": str(max(1, args.workers - 2)),
            "WS_STALL_SECONDS": "5",
            **extra,
        },
    )
    try:
        repo_id = server.api("POST", "/api/repos", {"path": "bench"}, expect=201)["id"]
        tally, stop = Tally(), threading.Event()
        samples: list[tuple[float, float]] = [(0.0, rss_kib(server.pid) / 1024)]
        print(f"workdir {workdir}; server pid {server.pid}", flush=True)
        print("minute  rss_MiB  sessions  messages  refused  let_go  errors", flush=True)
        print(f"{0:6.1f}  {samples[0][1]:7.1f}", flush=True)
        workers = [
            threading.Thread(target=_worker, args=(server, repo_id, n, tally, stop), daemon=True)
            for n in range(args.workers)
        ]
        for worker in workers:
            worker.start()
        started = time.monotonic()
        total = args.minutes + args.idle_minutes
        minute = 0
        while minute < total:
            minute += 1
            if minute > args.minutes and not stop.is_set():
                stop.set()
                for worker in workers:
                    worker.join(180)
            time.sleep(max(0.0, started + 60 * minute - time.monotonic()))
            rss = rss_kib(server.pid) / 1024
            samples.append((float(minute), rss))
            print(
                f"{minute:6.1f}  {rss:7.1f}  {tally.sessions:8d}  {_messages(server):8d}  "
                f"{tally.refused:7d}  {tally.let_go:6d}  {tally.errors:6d}"
                + ("  idle" if minute > args.minutes else ""),
                flush=True,
            )
        load = [s for s in samples if 0 < s[0] <= args.minutes]
        half = load[len(load) // 2 :]
        slope = (half[-1][1] - half[0][1]) / (half[-1][0] - half[0][0]) if len(half) > 1 else 0
        summary: dict[str, Any] = {
            "rss_start_mib": samples[0][1],
            "rss_after_first_minute_mib": samples[1][1] if len(samples) > 1 else None,
            "rss_load_end_mib": load[-1][1] if load else None,
            "rss_peak_mib": max(s[1] for s in samples),
            "rss_idle_end_mib": samples[-1][1],
            "slope_second_half_mib_per_min": round(slope, 2),
            "sessions": tally.sessions,
            "refused_429": tally.refused,
            "let_go_4008": tally.let_go,
            "errors": tally.errors,
            "first_errors": tally.first_errors,
        }
        print(json.dumps(summary, indent=2), flush=True)
        return 1 if tally.errors else 0
    finally:
        tracker.stop_all()
        left = tracker.leftovers()
        if left:
            print(f"processes left (killed): {left}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
