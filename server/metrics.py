"""Prometheus metrics (``/metrics``)."""

from __future__ import annotations

import re
from collections import Counter as _Tally
from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["REGISTRY", "render"]

REGISTRY = CollectorRegistry()

ACTIVE_SESSIONS = Gauge(
    "agent_sessions_active", "Sessions whose status is active", registry=REGISTRY
)
AGENT_PROCESSES = Gauge("agent_sessions_agent_processes", "Live agent processes", registry=REGISTRY)
TURNS_RUNNING = Gauge("agent_sessions_turns_running", "Prompt turns running", registry=REGISTRY)
VIEWERS = Gauge("agent_sessions_websocket_viewers", "Open WebSocket viewers", registry=REGISTRY)
MESSAGES = Counter("agent_sessions_messages_stored", "Messages stored", ["type"], registry=REGISTRY)
COMMIT_SECONDS = Histogram(
    "agent_sessions_store_commit_seconds",
    "Group commit latency",
    registry=REGISTRY,
    buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
)
BATCH_ROWS = Histogram(
    "agent_sessions_store_batch_rows",
    "Messages per group commit",
    registry=REGISTRY,
    buckets=(1, 2, 5, 10, 50, 100, 500, 1000, 2000),
)
AGENT_START_SECONDS = Histogram(
    "agent_sessions_agent_start_seconds",
    "Agent start (initialize + session/new)",
    registry=REGISTRY,
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
)
PERMISSION_WAIT_SECONDS = Histogram(
    "agent_sessions_permission_wait_seconds",
    "Time a permission request waited",
    registry=REGISTRY,
    buckets=(0.1, 0.5, 1, 5, 10, 30, 60, 300, 600),
)
REFUSED = Counter("agent_sessions_admission_refused", "Creates refused with 429", registry=REGISTRY)
EGRESS_REFUSED = Counter(
    "agent_sessions_egress_refused",
    "Connections of sandboxed agents the egress proxy refused (AGENT_NETWORK=proxy)",
    ["agent"],
    registry=REGISTRY,
)
# Usage by agent (issue 15). Labels stay bounded: agent ids come from the server's agent
# configuration; statuses, token kinds and ISO 4217-shaped currencies are closed sets.
RUNS = Counter(
    "agent_sessions_runs", "Runs ended, by outcome", ["agent", "status"], registry=REGISTRY
)
TOKENS = Counter(
    "agent_sessions_tokens",
    "Tokens the agents reported at the end of runs",
    ["agent", "kind"],
    registry=REGISTRY,
)
COST = Counter(
    "agent_sessions_cost",
    "Cost of runs as the agents reported it",
    ["agent", "currency"],
    registry=REGISTRY,
)
TOOL_FAILURES = Counter(
    "agent_sessions_tool_failures", "Tool calls that ended in error", ["agent"], registry=REGISTRY
)
_TOKEN_KINDS = {"input": "inputTokens", "output": "outputTokens", "cached": "cachedReadTokens"}
_CURRENCY = re.compile(r"[A-Z]{3}")


def observe_commit(seconds: float, rows: int) -> None:
    COMMIT_SECONDS.observe(seconds)
    BATCH_ROWS.observe(rows)


def count_messages(types: Iterable[str]) -> None:
    """Count stored messages by their ``type`` (one per message)."""
    for kind, count in _Tally(types).items():
        MESSAGES.labels(type=kind).inc(count)


def _amount(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
    return float(value) if ok else None


def observe_run(
    agent: str,
    status: str,
    usage: Mapping[str, object] | None = None,  # the agent's usage report, as sent
    cost: Mapping[str, object] | None = None,  # server.contents.Cost
    tool_failures: int = 0,
) -> None:
    """Count one ended run: its outcome, tokens, cost and failed tool calls."""
    RUNS.labels(agent=agent, status=status).inc()
    for kind, key in _TOKEN_KINDS.items():
        tokens = _amount((usage or {}).get(key))
        if tokens:
            TOKENS.labels(agent=agent, kind=kind).inc(tokens)
    amount = _amount((cost or {}).get("amount"))
    currency = (cost or {}).get("currency")
    if amount:
        code = currency if isinstance(currency, str) and _CURRENCY.fullmatch(currency) else "other"
        COST.labels(agent=agent, currency=code).inc(amount)
    if tool_failures:
        TOOL_FAILURES.labels(agent=agent).inc(tool_failures)


def render() -> bytes:
    return generate_latest(REGISTRY)
