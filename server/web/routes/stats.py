"""Usage statistics: ``GET /api/stats`` (buckets of runs) and ``GET /api/stats/tools``."""

from datetime import UTC, date, datetime, time, timedelta
from typing import TypedDict, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server.sessions import GroupBy, StatsQuery
from server.web.errors import ApiError
from server.web.jsonresp import JSONResponse
from server.web.requests import check_uuid, query_choice, query_int
from server.web.state import app_state
from server.web.views import iso

GROUPINGS = ("day", "agent", "repo", "status", "user")
DEFAULT_DAYS = 30
MAX_DAYS = 3660  # ten years: longer ranges are refused, not scanned


def zone(request: Request) -> str:
    name = request.query_params.get("tz") or "UTC"
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError, UnicodeError):
        raise ApiError.validation(
            f"tz must be an IANA time zone name such as Europe/Berlin; got {name!r}.", field="tz"
        ) from None
    return name


def _instant(request: Request, name: str, tz: str) -> datetime | None:
    """An ISO 8601 timestamp (no offset: local time of ``tz``) or a date (its local
    midnight)."""
    raw = request.query_params.get(name)
    if not raw:
        return None
    try:
        if len(raw) == 10:
            value = datetime.combine(date.fromisoformat(raw), time())
        else:
            value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ApiError.validation(
            f"{name} must be an ISO 8601 date or timestamp; got {raw!r}.", field=name
        ) from None
    if not 1970 <= value.year <= 9000:
        raise ApiError.validation(f"{name} must be between 1970 and 9000.", field=name)
    if value.tzinfo is None:
        value = value.replace(tzinfo=ZoneInfo(tz))
    return value.astimezone(UTC)


def stats_query(request: Request) -> StatsQuery:
    tz = zone(request)
    end = _instant(request, "to", tz) or datetime.now(UTC)
    start = _instant(request, "from", tz) or end - timedelta(days=DEFAULT_DAYS)
    if start >= end:
        raise ApiError.validation(
            f"from ({iso(start)}) must be before to ({iso(end)}).", field="from"
        )
    if end - start > timedelta(days=MAX_DAYS):
        raise ApiError.validation(f"The range may span at most {MAX_DAYS} days.", field="from")
    repo = request.query_params.get("repoId")
    return StatsQuery(
        start=start,
        end=end,
        tz=tz,
        repo_id=check_uuid(repo, "repoId") if repo else None,
        agent_id=request.query_params.get("agentId") or None,
    )


# The query as the answer echoes it ("from" is a keyword: the functional form).
StatsEcho = TypedDict(
    "StatsEcho",
    {"from": str | None, "to": str | None, "tz": str, "repoId": str | None, "agentId": str | None},
)


def _echo(query: StatsQuery) -> StatsEcho:
    return {
        "from": iso(query.start),
        "to": iso(query.end),
        "tz": query.tz,
        "repoId": query.repo_id,
        "agentId": query.agent_id,
    }


async def stats(request: Request) -> Response:
    group_by = cast(GroupBy, query_choice(request, "groupBy", GROUPINGS) or "day")
    query = stats_query(request)
    buckets = await app_state(request).sessions.stats.buckets(query, group_by)
    return JSONResponse({**_echo(query), "groupBy": group_by, "buckets": buckets})


async def tools(request: Request) -> Response:
    limit = query_int(request, "limit", 50, minimum=1, maximum=500)
    assert limit is not None
    query = stats_query(request)
    rows = await app_state(request).sessions.stats.tools(query, limit=limit)
    return JSONResponse({**_echo(query), "tools": rows})


routes = [
    Route("/api/stats", stats, methods=["GET"]),
    Route("/api/stats/tools", tools, methods=["GET"]),
]
