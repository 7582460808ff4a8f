"""Driving a live session's agent controls: set a mode or a config value, keep what the
session was put in, and put it back when the agent is started again.

What is kept (the ``agent_config`` column, ``Chosen``): every mode or config value a
client set, and every change the agent made by itself after the start (say, leaving plan
mode). The agent's own defaults at the start are not "chosen". When the agent starts
again (restart, resume, rewind, fork), each kept value is re-applied only where the agent
reports something else, and a value it no longer offers is left out (with a ``controls``
message, so the change is never silent).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

from agent_bridge import AcpClient, AgentExited, ProtocolBroken, RpcError
from agent_bridge.jsontypes import JsonObject, JsonValue
from server.contents import Change, ChangedBy, ControlsContent, ControlsView, as_json
from server.sessions.errors import Conflict, DomainError, Invalid
from server.sessions.live.controls_state import Chosen, ControlsState, chosen_of
from server.sessions.live.translate import Output
from server.sessions.live.turn import Turn
from server.stream.writer import Draft, Writer
from store.operations import StoreControls

__all__ = ["Controls"]

log = logging.getLogger("agent_sessions.controls")


def _view(state: ControlsState) -> JsonObject:
    return as_json(state.view())


def _merge(chosen: Chosen, stored: object) -> JsonObject:
    """The kept choices: the stored ones with ``chosen`` over them."""
    kept = chosen_of(stored)
    if "modeId" in chosen:
        kept["modeId"] = chosen["modeId"]
    if "config" in chosen:
        kept["config"] = {**kept.get("config", {}), **chosen["config"]}
    return dict(kept)


def _chosen_now(state: ControlsState, change: str) -> Chosen:
    if change == "mode" and state.current_mode() is not None:
        return {"modeId": str(state.current_mode())}
    if change == "config":
        return {"config": {o["id"]: o["currentValue"] for o in state.config}}
    return {}


def _agent_refused(exc: BaseException, what: str) -> DomainError:
    if isinstance(exc, RpcError):
        return Invalid(f"The agent refused the {what}: {exc.message}", agent_error=exc.code)
    return Conflict("session_not_active", "The agent is gone; try again.")


class Controls:
    """A live session's agent controls, a member of the live session. ``state`` is the
    translator's (agent updates change it); ``busy`` counts a client's changes on their
    way to the agent, ``started`` is set once the start's controls are read, ``kept``
    is (controls, agent_config) as stored when the session started."""

    def __init__(
        self,
        session_id: str,
        state: ControlsState,
        kept: tuple[JsonValue, JsonValue],
        client: AcpClient,
        writer: Writer,
        current_turn: Callable[[], Turn | None],
    ) -> None:
        self._session_id = session_id
        self.state = state
        self.kept = kept
        self._client = client
        self._writer = writer
        self._turn = current_turn
        self.busy = 0
        self.started = False

    def _persist(self, chosen: Chosen | None) -> StoreControls:
        """An op that stores the controls as they are when it runs, and merges ``chosen``."""
        merge = partial(_merge, chosen) if chosen else None
        return StoreControls(self._session_id, partial(_view, self.state), merge)

    def from_agent(self, outputs: list[Output]) -> tuple[list[Output], list[StoreControls]]:
        """The agent changed its controls (``controls`` outputs of the translator): store them
        and keep the new values. While a client's change is on its way, the agent's echo of
        it is not a message of its own (the client's change makes one); what comes before
        the start is done is part of the session's first controls, not a change."""
        ops: list[StoreControls] = []
        kept: list[Output] = []
        for out in outputs:
            content = out.content
            if content["type"] != "controls":
                kept.append(out)
                continue
            if not self.started:
                continue  # after_start stores them
            ops.append(self._persist(_chosen_now(self.state, content["change"])))
            if not self.busy:
                kept.append(out)
        return kept, ops

    async def _record(self, change: Change, by: ChangedBy, chosen: Chosen | None) -> None:
        content: ControlsContent = {
            "type": "controls",
            "change": change,
            "by": by,
            "controls": self.state.view(),
        }
        turn = self._turn()
        run_id, step = (turn.run_id, turn.step_number) if turn else (None, None)
        draft = Draft("system", as_json(content), None, run_id, step)
        await self._writer.submit(self._session_id, [draft], [self._persist(chosen)]).wait()

    async def _apply_mode(self, mode_id: str) -> None:
        """The agent's echo (a current_mode_update) is either seen while busy or finds the
        state already changed: either way it makes no message of its own."""
        state = self.state
        self.busy += 1
        try:
            await self._client.set_mode(mode_id)
            assert state.modes is not None
            state.modes = {**state.modes, "currentModeId": mode_id}
        finally:
            self.busy -= 1

    async def _apply_config(self, config_id: str, value: JsonValue) -> None:
        state = self.state
        self.busy += 1
        try:
            if state.legacy_model and config_id == "model":
                await self._client.set_model(str(value))
                state.set_current(config_id, value)
            else:
                answer = await self._client.set_config_option(config_id, value)
                if isinstance(answer.get("configOptions"), list):
                    state.set_options(answer["configOptions"])
                else:
                    state.set_current(config_id, value)
        finally:
            self.busy -= 1

    async def set_mode(self, mode_id: str) -> ControlsView:
        """ACP session/set_mode (also during a turn): 409 not_supported, 422 unknown mode."""
        self.state.check_mode(mode_id)
        try:
            await self._apply_mode(mode_id)
        except (RpcError, AgentExited, ProtocolBroken, TimeoutError) as exc:
            raise _agent_refused(exc, "mode") from None
        await self._record("mode", "client", {"modeId": mode_id})
        return self.state.view()

    async def set_config(self, config_id: str, value: JsonValue) -> ControlsView:
        """ACP session/set_config_option (session/set_model for a legacy ``model``)."""
        self.state.check_value(config_id, value)
        try:
            await self._apply_config(config_id, value)
        except (RpcError, AgentExited, ProtocolBroken, TimeoutError) as exc:
            raise _agent_refused(exc, "value") from None
        await self._record("config", "client", {"config": {config_id: value}})
        return self.state.view()

    async def after_start(self) -> None:
        """session/new, load or resume answered: read the controls, re-apply what is kept
        where the agent reports something else. The handshake stores them with the agent's
        session id (one write); a difference from what was stored is a ``controls`` message."""
        state = self.state
        state.apply_capabilities(self._client.agent_capabilities)
        state.apply_answer(self._client.session_result)
        stored, kept = self.kept
        chosen = chosen_of(kept)
        mode_id = chosen.get("modeId")
        if mode_id and state.current_mode() != mode_id:
            try:
                state.check_mode(mode_id)
                await self._apply_mode(mode_id)
            except (DomainError, RpcError) as exc:
                log.warning("kept mode %r not re-applied: %s", mode_id, exc)
        for config_id, value in chosen.get("config", {}).items():
            if not state.differs(config_id, value):
                continue
            try:
                state.check_value(config_id, value)
                await self._apply_config(config_id, value)
            except (DomainError, RpcError) as exc:
                log.warning("kept option %r not re-applied: %s", config_id, exc)
        view = state.view()
        if stored is not None and (
            stored.get("modes") != view["modes"] or stored.get("config") != view["config"]
        ):
            change: Change = "mode" if stored.get("modes") != view["modes"] else "config"
            content: ControlsContent = {
                "type": "controls",
                "change": change,
                "by": "agent",
                "controls": view,
            }
            self._writer.submit(
                self._session_id, [Draft("system", as_json(content))], [self._persist(None)]
            )
        self.started = True

    async def apply_create_choices(self, mode_id: str | None, config: dict[str, JsonValue]) -> None:
        """``modeId`` and ``config`` of a create request, right after session/new. A choice
        the agent does not offer (422) makes the caller discard the session: it was never
        created."""
        if mode_id is not None:
            await self.set_mode(mode_id)
        for config_id, value in config.items():
            await self.set_config(config_id, value)
