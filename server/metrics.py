"""Prometheus metrics (``/metrics``).

prometheus_client loads on first use, not at start-up (its package imports its HTTP
exposition and, through it, urllib and wsgiref: ~12 ms of a start, docs/performance.md).
The four gauges are plain numbers kept here (``Level``) that the registry reads at each
scrape; the counters and histograms are made at the first observation or scrape.
"""

from __future__ import annotations

import re
from collections import Counter as _Tally
from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.core import Metric

__all__ = [
    "ACTIVE_SESSIONS",
    "AGENT_PROCESSES",
    "TURNS_RUNNING",
    "VIEWERS",
    "Level",
    "count_messages",
    "observe_agent_start",
    "observe_commit",
    "observe_permission_wait",
    "observe_run",
    "refused",
    "refused_egress",
    "registry",
    "render",
]


class Level:
    """A gauge's value, set from the server's own state and read at each scrape."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def set(self, value: float) -> None:
        self.value = float(value)

    def inc(self, amount: float = 1) -> None:
        self.value += amount

    def dec(self, amount: float = 1) -> None:
        self.value -= amount


ACTIVE_SESSIONS = Level()
AGENT_PROCESSES = Level()
TURNS_RUNNING = Level()
VIEWERS = Level()
_LEVELS = {
    "agent_sessions_active": ("Sessions whose status is active", ACTIVE_SESSIONS),
    "agent_sessions_agent_processes": ("Live agent processes", AGENT_PROCESSES),
    "agent_sessions_turns_running": ("Prompt turns running", TURNS_RUNNING),
    "agent_sessions_websocket_viewers": ("Open WebSocket viewers", VIEWERS),
}
_TOKEN_KINDS = {"input": "inputTokens", "output": "outputTokens", "cached": "cachedReadTokens"}
_CURRENCY = re.compile(r"[A-Z]{3}")


class _Levels:
    """The registry's collector of the ``Level`` gauges."""

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        for name, (documentation, level) in _LEVELS.items():
            yield GaugeMetricFamily(name, documentation, value=level.value)


class _Families:
    """The counters and histograms, made (and prometheus_client imported) once."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry = registry = CollectorRegistry()
        registry.register(_Levels())
        self.messages = Counter(
            "agent_sessions_messages_stored", "Messages stored", ["type"], registry=registry
        )

        def histogram(name: str, documentation: str, buckets: tuple[float, ...]) -> Histogram:
            return Histogram(name, documentation, registry=registry, buckets=buckets)

        self.commit_seconds = histogram(
            "agent_sessions_store_commit_seconds",
            "Group commit latency",
            (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
        )
        self.batch_rows = histogram(
            "agent_sessions_store_batch_rows",
            "Messages per group commit",
            (1, 2, 5, 10, 50, 100, 500, 1000, 2000),
        )
        self.agent_start_seconds = histogram(
            "agent_sessions_agent_start_seconds",
            "Agent start (initialize + session/new)",
            (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
        )
        self.permission_wait_seconds = histogram(
            "agent_sessions_permission_wait_seconds",
            "Time a permission request waited",
            (0.1, 0.5, 1, 5, 10, 30, 60, 300, 600),
        )
        self.refused = Counter(
            "agent_sessions_admission_refused", "Creates refused with 429", registry=registry
        )
        self.egress_refused = Counter(
            "agent_sessions_egress_refused",
            "Connections of sandboxed agents the egress proxy refused (AGENT_NETWORK=proxy)",
            ["agent"],
            registry=registry,
        )
        # Usage by agent (issue 15). Labels stay bounded: agent ids come from the server's
        # agent configuration; statuses, token kinds and ISO 4217-shaped currencies are
        # closed sets.
        self.runs = Counter(
            "agent_sessions_runs", "Runs ended, by outcome", ["agent", "status"], registry=registry
        )
        self.tokens = Counter(
            "agent_sessions_tokens",
            "Tokens the agents reported at the end of runs",
            ["agent", "kind"],
            registry=registry,
        )
        self.cost = Counter(
            "agent_sessions_cost",
            "Cost of runs as the agents reported it",
            ["agent", "currency"],
            registry=registry,
        )
        self.tool_failures = Counter(
            "agent_sessions_tool_failures",
            "Tool calls that ended in error",
            ["agent"],
            registry=registry,
        )


@cache
def _families() -> _Families:
    return _Families()


def registry() -> CollectorRegistry:
    """The process's registry (every metric of ``/metrics``)."""
    return _families().registry


def observe_commit(seconds: float, rows: int) -> None:
    families = _families()
    families.commit_seconds.observe(seconds)
    families.batch_rows.observe(rows)


def count_messages(types: Iterable[str]) -> None:
    """Count stored messages by their ``type`` (one per message)."""
    counter = _families().messages
    for kind, count in _Tally(types).items():
        counter.labels(type=kind).inc(count)


def observe_agent_start(seconds: float) -> None:
    _families().agent_start_seconds.observe(seconds)


def observe_permission_wait(seconds: float) -> None:
    _families().permission_wait_seconds.observe(seconds)


def refused() -> None:
    """A create refused with 429 (the server's limit or a user's)."""
    _families().refused.inc()


def refused_egress(agent: str) -> None:
    _families().egress_refused.labels(agent=agent).inc()


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
    families = _families()
    families.runs.labels(agent=agent, status=status).inc()
    for kind, key in _TOKEN_KINDS.items():
        tokens = _amount((usage or {}).get(key))
        if tokens:
            families.tokens.labels(agent=agent, kind=kind).inc(tokens)
    amount = _amount((cost or {}).get("amount"))
    currency = (cost or {}).get("currency")
    if amount:
        code = currency if isinstance(currency, str) and _CURRENCY.fullmatch(currency) else "other"
        families.cost.labels(agent=agent, currency=code).inc(amount)
    if tool_failures:
        families.tool_failures.labels(agent=agent).inc(tool_failures)


def render() -> bytes:
    from prometheus_client import generate_latest

    return generate_latest(registry())
