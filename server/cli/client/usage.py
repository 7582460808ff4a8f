"""``agent-sessions usage``: the buckets of ``GET /api/stats`` as a table.

``--since 7d`` (m, h, d or w; or an ISO date) sets the range's start, ``--by`` the
grouping (day, agent, repo or status), ``--tz`` the zone of day buckets; ``--repo`` and
``--agent`` filter.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from server.cli.client.api import Api, find_repo
from server.cli.client.wire import JsonObject

__all__ = ["add_command", "cmd_usage", "parse_since", "usage_rows"]

_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
HEADER = ["KEY", "RUNS", "DONE", "FAILED", "TOOLS", "TOOL ERR", "MEDIAN", "P95", "TOTAL"]
HEADER += ["IN TOK", "OUT TOK", "CACHED", "COST"]


def parse_since(value: str) -> str:
    """``7d`` → the ISO instant 7 days ago; an ISO date or timestamp passes through."""
    match = re.fullmatch(r"(\d+)([mhdw])", value.strip())
    if match:
        delta = timedelta(**{_UNITS[match[2]]: int(match[1])})
        return (datetime.now(UTC) - delta).isoformat().replace("+00:00", "Z")
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError("use a span such as 7d, 12h, 2w or an ISO date") from None
    return value


def _seconds(ms: float | None) -> str:
    if ms is None:
        return "-"
    return f"{ms / 1000:.1f}s" if ms < 60_000 else f"{ms / 60_000:.1f}m"


def _cost(cost: list[JsonObject]) -> str:
    return " + ".join(f"{c['amount']:.4f} {c['currency']}" for c in cost) or "-"


def usage_rows(buckets: list[JsonObject], names: dict[str, str]) -> list[list[str]]:
    rows = [list(HEADER)]
    for b in buckets:
        status = b["byStatus"]
        key: str = b["key"]
        rows.append(
            [
                names.get(key, key),
                str(b["runs"]),
                str(status.get("completed", 0)),
                str(status.get("failed", 0) + status.get("interrupted", 0)),
                str(b["toolCalls"]),
                str(b["toolFailures"]),
                _seconds(b["durationMs"]["median"]),
                _seconds(b["durationMs"]["p95"]),
                _seconds(b["durationMs"]["total"]),
                str(b["tokens"]["input"]),
                str(b["tokens"]["output"]),
                str(b["tokens"]["cached"]),
                _cost(b["cost"]),
            ]
        )
    return rows


def cmd_usage(args: argparse.Namespace, api: Api, table: Callable[[list[list[str]]], str]) -> None:
    params: JsonObject = {"groupBy": args.by, "from": args.since, "tz": args.tz}
    if args.repo:
        params["repoId"] = find_repo(api, args.repo, register=False)["id"]
    if args.agent:
        params["agentId"] = args.agent
    body = api.call("GET", "/api/stats", params=params)
    names: dict[str, str] = {}
    if args.by == "repo":
        names = {r["id"]: r["name"] for r in api.call("GET", "/api/repos")["repos"]}
    if not body["buckets"]:
        print(f"no runs since {body['from']}", file=sys.stderr)
        return
    print(table(usage_rows(body["buckets"], names)))
    print(f"from {body['from']} to {body['to']} ({body['tz']})", file=sys.stderr)


def add_command(
    sub: Any,
    common: argparse.ArgumentParser,
    run: Callable[[Any], Any],
    table: Callable[[list[list[str]]], str],
) -> None:
    p = sub.add_parser("usage", parents=[common], help="runs, time, tokens and cost per bucket")
    p.add_argument("--since", type=parse_since, default=parse_since("7d"), help="default 7d")
    p.add_argument("--by", choices=("day", "agent", "repo", "status", "user"), default="day")
    p.add_argument("--tz", default="UTC", help="IANA zone of day buckets (default UTC)")
    p.add_argument("--repo", help="repository id, name or path")
    p.add_argument("--agent", help="agent id")
    p.set_defaults(func=run(lambda args, api: cmd_usage(args, api, table)))
