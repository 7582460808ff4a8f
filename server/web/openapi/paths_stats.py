"""Usage statistics (issue 15): ``/api/stats`` and ``/api/stats/tools``, and their
component schemas (``STATS_SCHEMAS``, added to the document's components)."""

from __future__ import annotations

from zoneinfo import available_timezones

from server.web.openapi.parts import int_param, json_response, op, optional, query
from server.web.openapi.schemas import TIME, UUID, Schema, closed, nullable, ref

__all__ = ["STATS", "STATS_SCHEMAS"]

GROUPINGS = ["day", "agent", "repo", "status"]
_NUMBER: Schema = {"type": "number"}
_COUNT: Schema = {"type": "integer", "minimum": 0}

STATS_SCHEMAS: dict[str, Schema] = {
    "StatsBucket": closed(
        ["key", "runs", "byStatus", "toolCalls", "toolFailures", "durationMs", "tokens", "cost"],
        key={"type": "string", "description": "A local day (YYYY-MM-DD), agent, repo or status."},
        runs=_COUNT,
        byStatus={"type": "object", "additionalProperties": _COUNT},
        toolCalls=_COUNT,
        toolFailures=_COUNT,
        durationMs=closed(
            ["total", "median", "p95"],
            total=_COUNT,
            median=nullable(_NUMBER),
            p95=nullable(_NUMBER),
        ),
        tokens=closed(["input", "output", "cached"], input=_COUNT, output=_COUNT, cached=_COUNT),
        cost={
            "type": "array",
            "items": closed(["currency", "amount"], currency={"type": "string"}, amount=_NUMBER),
        },
    ),
    "ToolStat": closed(
        ["toolName", "calls", "failures", "durationMs"],
        toolName=nullable({"type": "string"}),
        calls=_COUNT,
        failures=_COUNT,
        durationMs=closed(["median", "p95"], median=nullable(_NUMBER), p95=nullable(_NUMBER)),
    ),
}

_ECHO: dict[str, Schema] = {
    "from": TIME,
    "to": TIME,
    "tz": {"type": "string"},
    "repoId": nullable(UUID),
    "agentId": nullable({"type": "string"}),
}
_WHEN = (
    "An ISO 8601 timestamp (without an offset: local time of tz) or a date (its local midnight)."
)
_INSTANT = optional({"anyOf": [{"type": "string", "format": "date"}, TIME]})
_PARAMS = [
    query("from", _INSTANT, f"Inclusive; default: to - 30 days. {_WHEN}"),
    query("to", _INSTANT, f"Exclusive; default: now. {_WHEN}"),
    query("tz", optional({"enum": sorted(available_timezones())}), "Zone of day buckets; UTC."),
    query("repoId", optional(UUID)),
    query("agentId", {"type": "string"}),
]

STATS: dict[tuple[str, str], Schema] = {
    ("GET", "/api/stats"): op(
        "Usage buckets of runs",
        {
            200: json_response(
                "One bucket per key present in the range, in key order. Median and p95 are "
                "exact while the range's days hold at most 5 000 runs, else estimated from "
                "duration histograms within 19 % (docs/usage.md).",
                closed(
                    [*_ECHO, "groupBy", "buckets"],
                    **_ECHO,
                    groupBy={"enum": GROUPINGS},
                    buckets={"type": "array", "items": ref("StatsBucket")},
                ),
            )
        },
        params=[*_PARAMS, query("groupBy", optional({"enum": GROUPINGS}), "Default day.")],
        errors=[422],
    ),
    ("GET", "/api/stats/tools"): op(
        "Per tool name: calls, failures, median and p95 duration",
        {
            200: json_response(
                "Most called first. Median and p95 as for /api/stats (exact up to 5 000 "
                "calls, else within 19 %).",
                closed(
                    [*_ECHO, "tools"], **_ECHO, tools={"type": "array", "items": ref("ToolStat")}
                ),
            )
        },
        params=[*_PARAMS, int_param("limit", 1, 500)],
        errors=[422],
    ),
}
