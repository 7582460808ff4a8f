"""A live session's prompt turns, a member of the live session: store the user message
and the run, run the prompt in the background, end the run exactly once (completed,
cancelled, paused, failed), and cancel, abandoning a turn whose agent ignores
``session/cancel``. What turns use of their session is ``TurnHost``."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, Protocol

import anyio

from agent_bridge import AcpClient, AgentExited, ProtocolBroken, RpcError
from agent_bridge.acp_types import ContentBlock
from server import metrics
from server.contents import RunContent, TextContent, as_json
from server.sessions.errors import SessionNotActive, TurnInProgress
from server.sessions.live.agent_numbers import usage_report
from server.sessions.live.client_tools import ClientToolHost
from server.sessions.live.prompt_content import PromptContent
from server.sessions.live.prompt_frame import prompt_frame
from server.sessions.live.questions import Questions
from server.sessions.live.staging import stage
from server.sessions.live.transcript import stored_preamble
from server.sessions.live.translate import Output, Translator, tool_status
from server.sessions.live.turn import Turn
from server.sessions.services import CLEANUP_SECONDS, Services
from server.sessions.users.actor import actor_ref
from server.sessions.workspaces.service import checkpoint_turn
from server.stream.writer import Draft
from store import Run, utcnow
from store.operations import CloseRun, KeepAttachments, OpenRun, TitleFromPrompt, WriteOp

__all__ = ["EndOfTurn", "TurnHost", "Turns"]

log = logging.getLogger("agent_sessions.session")


class EndOfTurn(Protocol):
    """Told when a run has ended and the session is free for the next turn."""

    def turn_ended(self) -> None: ...


class TurnHost(Protocol):
    """What turns use of their live session."""

    services: Services
    id: str
    repo_id: str
    agent_id: str
    repo_path: Path
    translator: Translator
    client: AcpClient
    questions: Questions
    client_tools: ClientToolHost  # its calls wait as questions do, and end with them
    queue: EndOfTurn
    needs_context: bool
    cost_seen: float

    @property
    def stopping(self) -> bool: ...

    @property
    def running(self) -> bool: ...

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> None: ...

    def request_stop(self, run_status: str) -> None: ...


class Turns:
    """The session's turn (one at a time): ``current`` while it runs."""

    def __init__(self, live: TurnHost) -> None:
        self._live = live
        self.current: Turn | None = None

    async def start(
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
        if self.current is not None:
            raise TurnInProgress("A turn is already running in this session.")
        if self._live.stopping or not self._live.running:
            raise SessionNotActive("The session is stopping.")
        queued = run_id is not None
        run_id = run_id or str(uuid.uuid4())
        self._live.translator.tools.clear()  # agents reuse tool call ids across turns
        self._live.translator.last_text = ""
        turn = self.current = Turn(
            run_id,
            max_steps=max_steps,
            step_base=step_base,
            session_id=self._live.id,
            cost_base=self._live.cost_seen,
            clock=self._live.services.clock,
        )
        blocks: list[ContentBlock] = content.blocks if content else [text_block(text)]
        user: TextContent = content.stored if content else {"type": "text", "text": text}
        frame = prompt_frame(blocks)  # the user's prompt, before any preamble
        by = actor_ref()
        if by is not None:  # API.md "Users and access": who wrote it
            user = {**user, "by": by}  # type: ignore[typeddict-unknown-key]
        try:
            if self._live.needs_context:
                preamble = await stored_preamble(self._live.services.db, self._live.id)
                if preamble:
                    blocks.insert(0, {"type": "text", "text": preamble})
            now = utcnow()
            run = Run(
                id=run_id,
                session_id=self._live.id,
                repo_id=self._live.repo_id,
                agent_id=self._live.agent_id,
                status="running",
                step_count=step_base,
                max_steps=max_steps,
                parent_run_id=parent_run_id,
                resumed_from=resumed_from,
                created_at=now,
                user_id=by["id"] if by is not None else None,
            )

            drafts = [
                Draft("user", as_json(user), frame, run_id=run_id, step_number=step_base),
                self._run_draft(turn, "running"),
            ]
            ops: list[WriteOp] = [OpenRun(run, queued), TitleFromPrompt(self._live.id, text)]
            if content:
                ops.insert(0, KeepAttachments(content.attachments))
            await self._live.services.writer.submit(self._live.id, drafts, ops).wait()
        except BaseException:
            self.current = None
            raise
        self._live.needs_context = False
        services = self._live.services
        await checkpoint_turn(
            services.settings, services.writer, self._live.id, run_id, self._live.repo_path
        )
        self._live.start_soon(self._run_turn, turn, blocks)
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
            result = await self._live.client.prompt(blocks)
            stop_reason = str(result.get("stopReason") or "end_turn")
            turn.usage = usage_report(result.get("usage"), self._live.id)  # checked
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
        outputs = self._live.translator.flush()
        for call_id in self._live.translator.unfinished_tools():  # never finished: did not complete
            state = self._live.translator.tools[call_id]
            state.fields["status"] = "cancelled"
            outputs.append(Output("system", state.content(call_id)))
        self._live.questions.cancel("turn_ended", turn.run_id)
        self._live.client_tools.cancel(turn.run_id)
        duration = int((turn.clock() - turn.started) * 1000)
        drafts, ops = stage(outputs, turn)
        drafts.append(self._run_draft(turn, status, stop_reason, duration))
        values = {
            "status": status,
            "stop_reason": stop_reason,
            "duration_ms": duration,
            "completed_at": utcnow(),
            "summary": (self._live.translator.last_text or None)
            and self._live.translator.last_text[:500],
            "step_count": turn.step_number,
            "usage": turn.usage,
            "cost": turn.cost(),
            "error_message": error,
        }

        tools = self._live.translator.tools.values()
        failures = sum(1 for t in tools if tool_status(t.fields.get("status")) == "error")
        try:
            await self._live.services.writer.submit(
                self._live.id, drafts, [*ops, CloseRun(self._live.id, turn.run_id, values)]
            ).wait()
            metrics.observe_run(self._live.agent_id, status, turn.usage, turn.cost(), failures)
        except Exception:  # noqa: BLE001 - the writer reported it: the session ends in error
            # Raised on, it took the live session's task group down and the supervisor's
            # with it: the server then refused every new session (503) while /healthz
            # said ok.
            log.exception("the run's end could not be stored", extra={"session_id": self._live.id})
        finally:
            self.current = None
            turn.done.set()
            metrics.TURNS_RUNNING.dec()
            self._live.queue.turn_ended()  # queued prompts (live/queue.py): the next starts
            log.info(
                "run ended",
                extra={"session_id": self._live.id, "run_id": turn.run_id, "status": status},
            )

    async def cancel_current(self) -> None:
        if self.current is not None:
            await self.cancel(self.current)

    async def cancel(self, turn: Turn) -> None:
        turn.cancel_requested = True
        self._live.questions.cancel("turn_cancelled")
        self._live.client_tools.cancel()
        try:
            await self._live.client.cancel()
        except Exception:  # noqa: BLE001 - the agent may be gone already
            log.info("cancel could not be sent", extra={"session_id": self._live.id})
        self._live.start_soon(self._abandon_if_hung, turn)

    async def _abandon_if_hung(self, turn: Turn) -> None:
        """An agent that ignores session/cancel does not keep the turn open forever."""
        with anyio.move_on_after(self._live.services.settings.agent_stop_grace * 2):
            await turn.done.wait()
            return
        if self.current is turn and not turn.done.is_set():
            log.warning(
                "agent ignored session/cancel; ending the run and stopping the agent",
                extra={"session_id": self._live.id},
            )
            status = turn.final_status or ("paused" if turn.paused else "cancelled")
            await self._finish_turn(turn, status, "cancelled", None)
            if not self._live.stopping:  # its state is unknown: restart it on the next prompt
                self._live.needs_context = True
                self._live.request_stop("cancelled")


def text_block(text: str) -> ContentBlock:
    return {"type": "text", "text": text}
