"""Usage statistics: buckets of runs, and tool usage."""

from __future__ import annotations

from store import Database, stats_safe, tool_stats_fast
from store import stats as stats_store

__all__ = ["Stats"]


class Stats:
    """Each method is one read transaction."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def buckets(
        self, query: stats_store.StatsQuery, group_by: stats_store.GroupBy
    ) -> list[stats_store.Bucket]:
        # Exact or recomputed wide when a sum would overflow (store.stats_safe).
        return await stats_safe.run_buckets(self.database, query, group_by)

    async def tools(
        self, query: stats_store.StatsQuery, *, limit: int
    ) -> list[stats_store.ToolStat]:
        async with self.database.read() as db:
            return await tool_stats_fast.tool_stats(db, query, limit=limit)
