"""``/api/stats/tools`` from the ``stats_tools`` roll-up: whole days and hours of the range
from it, the edges from the tool calls (see store/stats_fast.py). Calls and failures are
exact; median and p95 exact below ``EXACT_LIMIT`` calls, estimated above."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from store import stats as exact
from store.histogram import estimate
from store.rollup import DAY, HIST, HOUR, bin_sql, fence
from store.stats_fast import EXACT_LIMIT, approx_count, each, no_jit, plan, us

__all__ = ["tool_stats"]


def _raw(raw: str, query: exact.StatsQuery, dialect: str) -> str:
    join = ""
    if query.agent_id or query.repo_id:
        join = " JOIN runs ON runs.id = tool_calls.run_id"
        if query.agent_id:
            join += " AND runs.agent_id = :agent"
        if query.repo_id:
            join += " AND runs.repo_id = :repo"
    hist = ", ".join(f"CASE WHEN t.bin = {i} THEN 1 ELSE 0 END AS {h}" for i, h in enumerate(HIST))
    calls = each(
        dialect,
        raw,
        "tool_calls",
        "tool_calls.created_at >= r.a AND tool_calls.created_at < r.b",
        "tool_calls.tool_name, tool_calls.status, tool_calls.duration_ms",
        then=join,
        index="ix_tool_calls_stats",
    )
    return (
        "SELECT t.tool_name AS name, 1 AS calls, "
        f"CASE WHEN t.status = 'error' THEN 1 ELSE 0 END AS failures, {hist} FROM ("
        "SELECT tool_calls.tool_name, tool_calls.status, "
        f"{bin_sql('tool_calls.duration_ms')} AS bin FROM {calls}{fence(dialect)}) AS t"
    )


async def tool_stats(
    db: AsyncSession, query: exact.StatsQuery, *, limit: int, exact_limit: int = EXACT_LIMIT
) -> list[exact.ToolStat]:
    if await approx_count(db, "stats_tools", "calls", query) <= exact_limit:
        return await exact.tool_stats(db, query, limit=limit)
    dialect = db.get_bind().dialect.name
    slots, raw = plan([(us(query.start), us(query.end), "")], (DAY, HOUR), dialect)
    params: dict[str, object] = {"fa": query.agent_id or "", "fr": query.repo_id or ""}
    if query.agent_id:
        params["agent"] = query.agent_id
    if query.repo_id:
        params["repo"] = query.repo_id
    parts = []
    columns = ", ".join(f"s.{h}" for h in HIST)
    for grain, starts in slots.items():
        parts.append(
            "SELECT CASE WHEN s.name_null = 1 THEN NULL ELSE s.tool_name END AS name, "
            f"s.calls, s.failures, {columns} FROM stats_tools s WHERE s.grain = {grain} "
            f"AND s.fa = :fa AND s.fr = :fr AND s.slot IN ({', '.join(map(str, starts))})"
        )
    if raw is not None:
        parts.append(_raw(raw, query, dialect))
    sums = ", ".join(f"SUM({h})" for h in HIST)
    stmt = (
        f"SELECT name, SUM(calls), SUM(failures), {sums} FROM ("
        + " UNION ALL ".join(parts)
        + ") AS u GROUP BY name HAVING SUM(calls) > 0 ORDER BY SUM(calls) DESC, name "
        f"LIMIT {int(limit)}"
    )
    await no_jit(db)
    out: list[exact.ToolStat] = []
    for name, calls, failures, *hist in await db.execute(text(stmt), params):
        median, p95 = estimate([int(n) for n in hist], 0.5, 0.95)
        out.append(
            {
                "toolName": name,
                "calls": int(calls),
                "failures": int(failures or 0),
                "durationMs": {
                    "median": exact._ms(median),  # noqa: SLF001 (one rounding)
                    "p95": exact._ms(p95),  # noqa: SLF001
                },
            }
        )
    return out
