"""Queued prompts (API.md, Finding and keeping sessions): a prompt sent with ``queue``
while a turn runs waits in its live session's ``PromptQueue`` as a run with status
``queued``, and starts when the turn before it ends (also when that one was cancelled),
in order. Dropping one ends its run ``cancelled``. The queue lives with the agent: when
the session stops, what still waits is cancelled; after a crash of the server, start-up
recovery ends what a dead process left ``queued`` (``supervision/recovery.py``).

The one hook into the turn's life is ``PromptQueue.turn_ended``, called by ``Turns``
(live/turns.py) once a run has ended and the session is free for the next turn."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

import anyio
import msgspec

from server.sessions.errors import Conflict, NotFound, TurnInProgress
from server.sessions.live.prompt_content import PromptContent
from server.sessions.live.turns import Turns
from server.sessions.services import CLEANUP_SECONDS, Services
from store import Run, utcnow
from store.operations import CancelQueued, QueueRun

__all__ = ["PromptQueue", "QueueFull", "QueueHost", "Queued"]


class QueueHost(Protocol):
    """What the queue uses of its live session."""

    services: Services
    id: str
    repo_id: str
    agent_id: str
    parent_run_id: str | None
    turns: Turns

    @property
    def stopping(self) -> bool: ...

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> None: ...


log = logging.getLogger("agent_sessions.queue")


class QueueFull(Conflict):
    def __init__(self, limit: int) -> None:
        super().__init__(
            "queue_full",
            f"{limit} prompts already wait for this session (MAX_QUEUED_PROMPTS); "
            "drop one or wait for the turn to end.",
            {"limit": limit},
        )


class Queued(msgspec.Struct):
    run_id: str
    text: str
    content: PromptContent | None
    # set once the queued run's row is committed: starting it updates that row
    stored: anyio.Event = msgspec.field(default_factory=anyio.Event)


class PromptQueue:
    """The prompts waiting for one live session's running turn, in order."""

    def __init__(self, live: QueueHost) -> None:
        self.live = live
        self.items: list[Queued] = []

    def position(self, run_id: str) -> int | None:
        for index, item in enumerate(self.items, start=1):
            if item.run_id == run_id:
                return index
        return None

    async def submit(
        self, text: str, content: PromptContent | None, *, limit: int
    ) -> tuple[str, int | None]:
        """Start the prompt now when the session is idle (position None), else queue it
        behind the running turn and what already waits (its 1-based position)."""
        live = self.live
        if live.turns.current is None and not self.items:
            try:
                return await self._start(text, content, None), None
            except TurnInProgress:
                pass  # a turn began meanwhile: wait behind it
        if len(self.items) >= limit:
            raise QueueFull(limit)
        item = Queued(str(uuid.uuid4()), text, content)
        self.items.append(item)  # before any await: a turn ending now sees it
        position = len(self.items)
        run = Run(
            id=item.run_id,
            session_id=live.id,
            repo_id=live.repo_id,
            agent_id=live.agent_id,
            status="queued",
            step_count=0,
            max_steps=live.services.settings.agent_max_steps,
            parent_run_id=live.parent_run_id,
            created_at=utcnow(),
        )

        try:
            await live.services.writer.submit(live.id, [], [QueueRun(run)]).wait()
        except BaseException:
            if item in self.items:
                self.items.remove(item)
            raise
        finally:
            item.stored.set()
        return item.run_id, position

    async def drop(self, run_id: str) -> None:
        """Take a waiting prompt out; its run ends ``cancelled`` (404 once it started)."""
        item = next((i for i in self.items if i.run_id == run_id), None)
        if item is None:
            raise NotFound("run", run_id, f"No queued run {run_id} in this session.")
        self.items.remove(item)
        await item.stored.wait()
        await self._cancel_runs([item.run_id])

    def turn_ended(self) -> None:
        """The hook: the turn before has ended; start the next waiting prompt, or, when
        the session is stopping, cancel every waiting one."""
        live = self.live
        if not self.items:
            return
        if live.stopping:
            items, self.items = self.items, []
            live.start_soon(self._cancel_runs, [i.run_id for i in items])
            return
        live.start_soon(self._start_next)

    async def _start_next(self) -> None:
        if not self.items or self.live.turns.current is not None:
            return  # another prompt took the turn: this one waits for its end
        item = self.items.pop(0)
        await item.stored.wait()
        try:
            await self._start(item.text, item.content, item.run_id)
        except TurnInProgress:
            self.items.insert(0, item)  # a direct prompt won the race: wait for it
        except Exception:
            log.exception("a queued prompt could not start", extra={"session_id": self.live.id})
            await self._cancel_runs([item.run_id])
            self.turn_ended()  # the ones behind it still get their turn

    async def _start(self, text: str, content: PromptContent | None, run_id: str | None) -> str:
        live = self.live
        return await live.turns.start(
            text,
            max_steps=live.services.settings.agent_max_steps,
            parent_run_id=live.parent_run_id,
            content=content,
            run_id=run_id,
        )

    async def _cancel_runs(self, run_ids: list[str]) -> None:
        cancel = CancelQueued(run_ids, utcnow())
        with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
            await self.live.services.writer.submit(self.live.id, [], [cancel]).wait()
