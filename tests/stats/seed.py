"""A small, hand-computable history of runs and tool calls, written straight into the
database (the statistics read what the server stored; how it got there is tested
elsewhere). The run ends go through ``store.runs.update_run``, the path the server takes,
so its roll-ups (tokens, cost, tool counts) are under test too.

run agent status      created (UTC)    ms   in/out/cached cost     tools (name ms status)
R1  alpha completed   2026-03-01 10:00 100  100/10/5      0.10 USD read 10 ok, write 30 error
R2  alpha failed      2026-03-01 23:30 300  200/20/-      0.20 USD read 20 ok
R3  beta  completed   2026-03-02 03:00 200  50/5/1        0.50 EUR
R4  beta  interrupted 2026-03-02 12:00 1000 -             -        read 40 error
R5  alpha running     2026-03-02 13:00 -    -             -
R6  beta  completed   2026-03-09 04:30 50   10/1/-        0.01 USD

New York is UTC-5 until 2026-03-08 07:00 UTC, then UTC-4: R3 falls on its 03-01, R6 on
its 03-09 (with the winter offset it would be 03-08).
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio

from store import Run, SessionRecord, ToolCall, open_database
from store import runs as run_store


@dataclass(frozen=True)
class SeedRun:
    agent: str
    status: str
    created: datetime
    duration: int | None
    usage: dict[str, int] | None
    cost: dict[str, Any] | None
    tools: tuple[tuple[str, int, str], ...] = ()
    error: str | None = None


def _t(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 3, day, hour, minute, tzinfo=UTC)


RUNS = (
    SeedRun(
        "alpha",
        "completed",
        _t(1, 10),
        100,
        {"inputTokens": 100, "outputTokens": 10, "cachedReadTokens": 5, "totalTokens": 110},
        {"amount": 0.10, "currency": "USD"},
        (("read", 10, "completed"), ("write", 30, "error")),
    ),
    SeedRun(
        "alpha",
        "failed",
        _t(1, 23, 30),
        300,
        {"inputTokens": 200, "outputTokens": 20, "totalTokens": 220},
        {"amount": 0.20, "currency": "USD"},
        (("read", 20, "completed"),),
        error="agent exited with code 3",
    ),
    SeedRun(
        "beta",
        "completed",
        _t(2, 3),
        200,
        {"inputTokens": 50, "outputTokens": 5, "cachedReadTokens": 1, "totalTokens": 55},
        {"amount": 0.5, "currency": "EUR"},
    ),
    SeedRun("beta", "interrupted", _t(2, 12), 1000, None, None, (("read", 40, "error"),)),
    SeedRun("alpha", "running", _t(2, 13), None, None, None),
    SeedRun(
        "beta",
        "completed",
        _t(9, 4, 30),
        50,
        {"inputTokens": 10, "outputTokens": 1, "totalTokens": 11},
        {"amount": 0.01, "currency": "USD"},
    ),
)


async def _seed(url: str, repo_id: str, shift: timedelta) -> list[str]:
    db = open_database(url)
    ids: list[str] = []
    try:
        async with db.write() as s, s.begin():
            for n, original in enumerate(RUNS):
                spec = replace(original, created=original.created + shift)
                session_id = str(uuid.uuid4())
                s.add(
                    SessionRecord(
                        id=session_id,
                        repo_id=repo_id,
                        agent_id=spec.agent,
                        status="completed",
                        title=f"seed {n + 1}",
                        created_at=spec.created,
                        updated_at=spec.created,
                        last_activity_at=spec.created,
                        last_seq=0,
                        meta={},
                    )
                )
                await s.flush()
                run_id = str(uuid.uuid4())
                ids.append(run_id)
                s.add(
                    Run(
                        id=run_id,
                        session_id=session_id,
                        repo_id=repo_id,
                        agent_id=spec.agent,
                        status="running",
                        max_steps=50,
                        created_at=spec.created,
                    )
                )
                await s.flush()
                for step, (name, ms, status) in enumerate(spec.tools, start=1):
                    at = spec.created + timedelta(seconds=step)
                    s.add(
                        ToolCall(
                            id=str(uuid.uuid4()),
                            run_id=run_id,
                            session_id=session_id,
                            tool_call_id=f"call-{step}",
                            tool_name=name,
                            kind="read" if name == "read" else "edit",
                            status=status,
                            duration_ms=ms,
                            step_number=step,
                            created_at=at,
                            started_at=at,
                            completed_at=at + timedelta(milliseconds=ms),
                        )
                    )
                await s.flush()
                if spec.status == "running":
                    continue
                end: dict[str, Any] = {"status": spec.status, "duration_ms": spec.duration}
                if spec.status != "interrupted":  # recovery closes a run without usage
                    end |= {"usage": spec.usage, "cost": spec.cost}
                end["error_message"] = spec.error
                end["step_count"] = len(spec.tools)
                await run_store.update_run(s, run_id, **end)
    finally:
        await db.close()
    return ids


def seed(url: str, repo_id: str, shift: timedelta = timedelta()) -> list[str]:
    """Write the table above (moved by ``shift``); returns the run ids R1..R6. On a thread
    of its own: the browser tests' thread already runs Playwright's event loop."""
    out: list[list[str]] = []
    thread = threading.Thread(target=lambda: out.append(anyio.run(_seed, url, repo_id, shift)))
    thread.start()
    thread.join()
    assert out, "seeding failed (see the thread's traceback above)"
    return out[0]
