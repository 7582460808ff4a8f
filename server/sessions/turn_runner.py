"""A live session's prompt turns: store the user message and the run, run the prompt in
the background, end the run exactly once (completed, cancelled, paused, failed), and
cancel, abandoning a turn whose agent ignores ``session/cancel``."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import anyio

from agent_bridge import AgentExited, ProtocolBroken, RpcError
from agent_bridge.acp_types import ContentBlock
from server import metrics
from server.contents import RunContent, TextContent, as_json
from server.sessions.errors import SessionNotActive, TurnInProgress
from server.sessions.live_base import LiveBase, Stop
from server.sessions.prompt_content import PromptContent
from server.sessions.services import CLEANUP_SECONDS
from server.sessions.transcript import stored_preamble
from server.sessions.translate import Output, tool_status
from server.sessions.turn import Turn
from server.sessions.workspaces.service import checkpoint_turn
from server.stream.writer import Draft
from store import Run, utcnow
from store import runs as run_store
from store import sessions as session_store
from store.glance import set_prompt_title

__all__ = ["TurnRunner"]

log = logging.getLogger("agent_sessions.session")


class TurnRunner(LiveBase):
    async def start_turn(
        self,
        text: str,
        *,
        max_steps: int,
        step_base: int = 0,
        resumed_from: str | None = None,
        parent_run_id: str | None = None,
        content: PromptContent | None = None,
        run_id: str | None = None,
    ) -> str:
        """Store the user message and the run, then run the turn in the background.
        Returns the run id once both are committed. ``content``: a prompt of blocks
        (images, files), already checked. ``run_id``: a queued run's, whose row starts."""
        if self.turn is not None:
            raise TurnInProgress("A turn is already running in this session.")
        if self._stop is not None or self._tg is None:
            raise SessionNotActive("The session is stopping.")
        queued = run_id is not None
        run_id = run_id or str(uuid.uuid4())
        self.translator.tools.clear()  # agents reuse tool call ids across turns
        self.translator.last_text = ""
        turn = self.turn = Turn(
            run_id,
            max_steps=max_steps,
            step_base=step_base,
            session_id=self.id,
            cost_base=self.cost_seen,
            clock=self.services.clock,
        )
        blocks: list[ContentBlock] = content.blocks if content else [text_block(text)]
        user: TextContent = content.stored if content else {"type": "text", "text": text}
        try:
            if self.needs_context:
                preamble = await stored_preamble(self.services.db, self.id)
                if preamble:
                    blocks.insert(0, {"type": "text", "text": preamble})
            now = utcnow()
            run = Run(
                id=run_id,
                session_id=self.id,
                repo_id=self.repo_id,
                agent_id=self.agent_id,
                status="running",
                step_count=step_base,
                max_steps=max_steps,
                parent_run_id=parent_run_id,
                resumed_from=resumed_from,
                created_at=now,
            )

            async def store_run(db: Any) -> None:
                if queued:
                    await db.merge(run)  # the queued row becomes the running one
                else:
                    db.add(run)
                await db.flush()
                await set_prompt_title(db, self.id, text)
                await session_store.update_session(
                    db, self.id, active_run_id=run_id, needs_context=False
                )

            drafts = [
                Draft("user", as_json(user), run_id=run_id, step_number=step_base),
                self._run_draft(turn, "running"),
            ]
            ops = [content.store, store_run] if content else [store_run]
            await self.services.writer.submit(self.id, drafts, ops).wait()
        except BaseException:
            self.turn = None
            raise
        self.needs_context = False
        services = self.services
        await checkpoint_turn(services.settings, services.writer, self.id, run_id, self.repo_path)
        assert self._tg is not None
        self._tg.start_soon(self._run_turn, turn, blocks)
        metrics.TURNS_RUNNING.inc()
        return run_id

    def _run_draft(
        self,
        turn: Turn,
        status: str,
        stop_reason: str | None = None,
        duration_ms: int | None = None,
    ) -> Draft:
        content: RunContent = {
            "type": "run",
            "runId": turn.run_id,
            "status": status,
            "stopReason": stop_reason,
            "durationMs": duration_ms,
        }
        return Draft("system", as_json(content), run_id=turn.run_id, step_number=turn.step_number)

    async def _run_turn(self, turn: Turn, blocks: list[ContentBlock]) -> None:
        status, stop_reason, error = "failed", None, None
        try:
            result = await self.client.prompt(blocks)
            stop_reason = str(result.get("stopReason") or "end_turn")
            turn.usage = result.get("usage") if isinstance(result.get("usage"), dict) else None
            cancelled = stop_reason == "cancelled" or turn.cancel_requested
            status = "cancelled" if cancelled else "completed"
        except RpcError as exc:
            error = f"the agent answered the prompt with error {exc.code}: {exc.message}"
        except (AgentExited, ProtocolBroken) as exc:
            error = str(exc)
        finally:
            with anyio.move_on_after(CLEANUP_SECONDS, shield=True):
                if turn.final_status is not None:
                    status = turn.final_status
                elif turn.paused:
                    status = "paused"
                await self._finish_turn(turn, status, stop_reason, error)

    async def _finish_turn(
        self, turn: Turn, status: str, stop_reason: str | None, error: str | None
    ) -> None:
        """End the run once: a turn abandoned after cancel is not ended again when the
        agent's late answer (or the stop) finally comes."""
        if turn.finished:
            return
        turn.finished = True
        outputs = self.translator.flush()
        for call_id in self.translator.unfinished_tools():  # never finished: did not complete
            state = self.translator.tools[call_id]
            state.fields["status"] = "cancelled"
            outputs.append(Output("system", state.content(call_id)))
        self._cancel_pending("turn_ended", turn.run_id)
        duration = int((turn.clock() - turn.started) * 1000)
        drafts, ops = self._stage(outputs, turn)
        drafts.append(self._run_draft(turn, status, stop_reason, duration))
        values = {
            "status": status,
            "stop_reason": stop_reason,
            "duration_ms": duration,
            "completed_at": utcnow(),
            "summary": (self.translator.last_text or None) and self.translator.last_text[:500],
            "step_count": turn.step_number,
            "usage": turn.usage,
            "cost": turn.cost(),
            "error_message": error,
        }

        async def close_run(db: Any) -> None:
            await run_store.update_run(db, turn.run_id, **values)
            await session_store.update_session(db, self.id, active_run_id=None)

        tools = self.translator.tools.values()
        failures = sum(1 for t in tools if tool_status(t.fields.get("status")) == "error")
        try:
            await self.services.writer.submit(self.id, drafts, [*ops, close_run]).wait()
            metrics.observe_run(self.agent_id, status, turn.usage, turn.cost(), failures)
        finally:
            self.turn = None
            turn.done.set()
            metrics.TURNS_RUNNING.dec()
            self.queue.turn_ended()  # queued prompts (server.sessions.queue): the next starts
            log.info(
                "run ended", extra={"session_id": self.id, "run_id": turn.run_id, "status": status}
            )

    async def cancel_turn(self) -> None:
        if self.turn is not None:
            await self._cancel_turn(self.turn)

    async def _cancel_turn(self, turn: Turn) -> None:
        turn.cancel_requested = True
        self._cancel_pending("turn_cancelled")
        try:
            await self.client.cancel()
        except Exception:  # noqa: BLE001 - the agent may be gone already
            log.info("cancel could not be sent", extra={"session_id": self.id})
        self._tg_start(self._abandon_if_hung, turn)

    async def _abandon_if_hung(self, turn: Turn) -> None:
        """An agent that ignores session/cancel does not keep the turn open forever."""
        with anyio.move_on_after(self.services.settings.agent_stop_grace * 2):
            await turn.done.wait()
            return
        if self.turn is turn and not turn.done.is_set():
            log.warning(
                "agent ignored session/cancel; ending the run and stopping the agent",
                extra={"session_id": self.id},
            )
            status = turn.final_status or ("paused" if turn.paused else "cancelled")
            await self._finish_turn(turn, status, "cancelled", None)
            if self._stop is None:  # its state is unknown: restart it on the next prompt
                self.needs_context = True
                self._stop = Stop("cancelled")
                self._stop_requested.set()


def text_block(text: str) -> ContentBlock:
    return {"type": "text", "text": text}
