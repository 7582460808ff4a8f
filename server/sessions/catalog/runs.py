"""Runs as listed and shown: the run list, one run, its messages and its tool calls."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from server.sessions.errors import NotFound
from store import Database, Message, Run, ToolCall
from store import messages as message_store
from store import replay as replay_store
from store import runs as run_store
from store.message_row import MessageRow

__all__ = ["Runs"]


class Runs:
    """Each method is one read transaction."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def list(
        self, where: run_store.RunFilter, *, limit: int, before: tuple[datetime, str] | None
    ) -> Sequence[Run]:
        async with self.database.read() as db:
            return await run_store.list_runs(db, where, limit=limit, before=before)

    async def get(self, run_id: str) -> Run:
        """The run (NotFound when there is none)."""
        async with self.database.read() as db:
            run = await run_store.get_run(db, run_id)
        if run is None:
            raise NotFound("run", run_id)
        return run

    async def messages(
        self, run: Run, where: message_store.MessageFilter, *, limit: int
    ) -> Sequence[MessageRow]:
        """A page of the run's messages (``where`` names the run)."""
        async with self.database.read() as db:
            return await replay_store.view_rows(db, run.session_id, where, limit=limit)

    async def message(self, run: Run, message_id: str) -> Message:
        """One message of the run (NotFound when it is not the run's)."""
        async with self.database.read() as db:
            message = await message_store.get_message(db, message_id)
        if message is None or message.run_id != run.id:
            raise NotFound("message", message_id)
        return message

    async def tool_calls(
        self,
        run: Run,
        *,
        tool_name: str | None,
        statuses: tuple[str, ...],
        limit: int,
        after: tuple[int, str] | None,
    ) -> Sequence[ToolCall]:
        async with self.database.read() as db:
            return await run_store.list_tool_calls(
                db, run.id, tool_name=tool_name, statuses=statuses, limit=limit, after=after
            )

    async def tool_call(self, run: Run, call_id: str) -> ToolCall:
        """One tool call of the run (NotFound when it is not the run's)."""
        async with self.database.read() as db:
            call = await run_store.get_tool_call(db, call_id)
        if call is None or call.run_id != run.id:
            raise NotFound("tool_call", call_id)
        return call

    async def resume_state(self, run: Run) -> tuple[Run | None, int]:
        """The run that already resumed ``run`` (if any) and the steps ``run`` used: its
        own count, or its last booked step if the server died before it could close the
        run (the next step never reuses a number)."""
        async with self.database.read() as db:
            later = await run_store.resumed_by(db, run.id)
            steps = max(run.step_count, await run_store.last_step(db, run.id))
        return later, steps
