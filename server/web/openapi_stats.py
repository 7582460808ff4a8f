"""The OpenAPI operations and schemas of ``/api/stats`` (issue 15), added to the
catalogue by ``server.web.openapi`` with ``register``."""

from __future__ import annotations

from typing import Any
from zoneinfo import available_timezones

Schema = dict[str, Any]

__all__ = ["register"]


def register(catalogue: dict[tuple[str, str], Schema], schemas: dict[str, Schema]) -> None:
    from server.web import openapi as o  # noqa: PLC0415 (openapi calls this at its end)

    number: Schema = {"type": "number"}
    GROUPINGS = ("day", "agent", "repo", "status")  # noqa: N806
    count: Schema = {"type": "integer", "minimum": 0}
    schemas["StatsBucket"] = o._closed(  # noqa: SLF001 (the catalogue's own helpers)
        ["key", "runs", "byStatus", "toolCalls", "toolFailures", "durationMs", "tokens", "cost"],
        key={"type": "string", "description": "A local day (YYYY-MM-DD), agent, repo or status."},
        runs=count,
        byStatus={"type": "object", "additionalProperties": count},
        toolCalls=count,
        toolFailures=count,
        durationMs=o._closed(  # noqa: SLF001
            ["total", "median", "p95"], total=count, median=o._null(number), p95=o._null(number)
        ),
        tokens=o._closed(["input", "output", "cached"], input=count, output=count, cached=count),  # noqa: SLF001
        cost={
            "type": "array",
            "items": o._closed(  # noqa: SLF001
                ["currency", "amount"], currency={"type": "string"}, amount=number
            ),
        },
    )
    schemas["ToolStat"] = o._closed(  # noqa: SLF001
        ["toolName", "calls", "failures", "durationMs"],
        toolName=o._null({"type": "string"}),  # noqa: SLF001
        calls=count,
        failures=count,
        durationMs=o._closed(  # noqa: SLF001
            ["median", "p95"], median=o._null(number), p95=o._null(number)
        ),
    )
    echo = {
        "from": o.TIME,
        "to": o.TIME,
        "tz": {"type": "string"},
        "repoId": o._null(o.UUID),  # noqa: SLF001
        "agentId": o._null({"type": "string"}),  # noqa: SLF001
    }
    when = (
        "An ISO 8601 timestamp (without an offset: local time of tz) or a date (its local "
        "midnight)."
    )
    instant = o._optional({"anyOf": [{"format": "date", "type": "string"}, o.TIME]})  # noqa: SLF001
    zones = {"enum": sorted(available_timezones())}
    params = [
        o._query("from", instant, f"Inclusive; default: to - 30 days. {when}"),  # noqa: SLF001
        o._query("to", instant, f"Exclusive; default: now. {when}"),  # noqa: SLF001
        o._query("tz", o._optional(zones), "IANA time zone of day buckets; default UTC."),  # noqa: SLF001
        o._query("repoId", o._optional(o.UUID)),  # noqa: SLF001
        o._query("agentId", {"type": "string"}),  # noqa: SLF001
    ]
    catalogue[("GET", "/api/stats")] = o._op(  # noqa: SLF001
        "Usage buckets of runs",
        {
            200: o._json(  # noqa: SLF001
                "One bucket per key present in the range, in key order.",
                o._closed(  # noqa: SLF001
                    [*echo, "groupBy", "buckets"],
                    **echo,
                    groupBy={"enum": ["day", "agent", "repo", "status"]},
                    buckets={"type": "array", "items": o._ref("StatsBucket")},  # noqa: SLF001
                ),
            )
        },
        params=[
            *params,
            o._query("groupBy", o._optional({"enum": list(GROUPINGS)}), "Default day."),  # noqa: SLF001
        ],
        errors=[422],
    )
    catalogue[("GET", "/api/stats/tools")] = o._op(  # noqa: SLF001
        "Per tool name: calls, failures, median and p95 duration",
        {
            200: o._json(  # noqa: SLF001
                "Most called first.",
                o._closed(  # noqa: SLF001
                    [*echo, "tools"],
                    **echo,
                    tools={"type": "array", "items": o._ref("ToolStat")},  # noqa: SLF001
                ),
            )
        },
        params=[*params, o._int("limit", 1, 500)],  # noqa: SLF001
        errors=[422],
    )
