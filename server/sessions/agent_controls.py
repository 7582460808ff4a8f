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
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from agent_bridge import AgentExited, ProtocolBroken, RpcError
from agent_bridge.jsontypes import JsonObject, JsonValue
from server.contents import Change, ChangedBy, ControlsContent, ControlsView, as_json
from server.sessions.controls import Chosen, ControlsState, chosen_of
from server.sessions.errors import Conflict, DomainError, Invalid
from server.sessions.status import log_active_count
from server.sessions.translate import Output
from server.stream.writer import Draft
from server.users.actor import actor_ref
from store import sessions as session_store

if TYPE_CHECKING:
    from server.sessions.live_session import LiveSession

__all__ = ["after_start", "apply_create_choices", "from_agent", "set_config", "set_mode"]

log = logging.getLogger("agent_sessions.controls")

Op = Callable[[Any], Awaitable[None]]


def _state(live: LiveSession) -> ControlsState:
    return live.translator.controls


def _persist(live: LiveSession, chosen: Chosen | None) -> Op:
    """An op that stores the controls as they are when it runs, and merges ``chosen``."""

    async def store(db: Any) -> None:
        values: JsonObject = {"controls": as_json(_state(live).view())}
        if chosen:
            record = await session_store.get_session(db, live.id)
            kept = chosen_of(record.agent_config if record else None)
            if "modeId" in chosen:
                kept["modeId"] = chosen["modeId"]
            if "config" in chosen:
                kept["config"] = {**kept.get("config", {}), **chosen["config"]}
            values["agent_config"] = dict(kept)
        await session_store.update_session(db, live.id, **values)

    return store


def _chosen_now(state: ControlsState, change: str) -> Chosen:
    if change == "mode" and state.current_mode() is not None:
        return {"modeId": str(state.current_mode())}
    if change == "config":
        return {"config": {o["id"]: o["currentValue"] for o in state.config}}
    return {}


def from_agent(live: LiveSession, outputs: list[Output]) -> tuple[list[Output], list[Op]]:
    """The agent changed its controls (``controls`` outputs of the translator): store them
    and keep the new values. While a client's change is on its way, the agent's echo of
    it is not a message of its own (the client's change makes one); what comes before
    the start is done is part of the session's first controls, not a change."""
    ops: list[Op] = []
    kept: list[Output] = []
    for out in outputs:
        content = out.content
        if content["type"] != "controls":
            kept.append(out)
            continue
        if not live.controls_started:
            continue  # after_start stores them
        ops.append(_persist(live, _chosen_now(_state(live), content["change"])))
        if not live.controls_busy:
            kept.append(out)
    return kept, ops


async def _record(live: LiveSession, change: Change, by: ChangedBy, chosen: Chosen | None) -> None:
    content: ControlsContent = {
        "type": "controls",
        "change": change,
        "by": by,
        "controls": _state(live).view(),
    }
    if by == "client":  # API.md "Users and access": the person behind the client
        content["user"] = actor_ref()  # type: ignore[typeddict-unknown-key]
    turn = live.turn
    run_id, step = (turn.run_id, turn.step_number) if turn else (None, None)
    draft = Draft("system", as_json(content), None, run_id, step)
    await live.services.writer.submit(live.id, [draft], [_persist(live, chosen)]).wait()


def _agent_refused(exc: BaseException, what: str) -> DomainError:
    if isinstance(exc, RpcError):
        return Invalid(f"The agent refused the {what}: {exc.message}", agent_error=exc.code)
    return Conflict("session_not_active", "The agent is gone; try again.")


async def _apply_mode(live: LiveSession, mode_id: str) -> None:
    """The agent's echo (a current_mode_update) is either seen while busy or finds the
    state already changed: either way it makes no message of its own."""
    state = _state(live)
    live.controls_busy += 1
    try:
        await live.client.set_mode(mode_id)
        assert state.modes is not None
        state.modes = {**state.modes, "currentModeId": mode_id}
    finally:
        live.controls_busy -= 1


async def _apply_config(live: LiveSession, config_id: str, value: JsonValue) -> None:
    state = _state(live)
    live.controls_busy += 1
    try:
        if state.legacy_model and config_id == "model":
            await live.client.set_model(str(value))
            state.set_current(config_id, value)
        else:
            answer = await live.client.set_config_option(config_id, value)
            if isinstance(answer.get("configOptions"), list):
                state.set_options(answer["configOptions"])
            else:
                state.set_current(config_id, value)
    finally:
        live.controls_busy -= 1


async def set_mode(live: LiveSession, mode_id: str) -> ControlsView:
    """ACP session/set_mode (also during a turn): 409 not_supported, 422 unknown mode."""
    _state(live).check_mode(mode_id)
    try:
        await _apply_mode(live, mode_id)
    except (RpcError, AgentExited, ProtocolBroken, TimeoutError) as exc:
        raise _agent_refused(exc, "mode") from None
    await _record(live, "mode", "client", {"modeId": mode_id})
    return _state(live).view()


async def set_config(live: LiveSession, config_id: str, value: JsonValue) -> ControlsView:
    """ACP session/set_config_option (session/set_model for a legacy ``model``)."""
    _state(live).check_value(config_id, value)
    try:
        await _apply_config(live, config_id, value)
    except (RpcError, AgentExited, ProtocolBroken, TimeoutError) as exc:
        raise _agent_refused(exc, "value") from None
    await _record(live, "config", "client", {"config": {config_id: value}})
    return _state(live).view()


async def after_start(live: LiveSession) -> None:
    """session/new, load or resume answered: read the controls, re-apply what is kept
    where the agent reports something else. The handshake stores them with the agent's
    session id (one write); a difference from what was stored is a ``controls`` message."""
    state = _state(live)
    state.apply_capabilities(live.client.agent_capabilities)
    state.apply_answer(live.client.session_result)
    stored, kept = live.controls_kept
    chosen = chosen_of(kept)
    mode_id = chosen.get("modeId")
    if mode_id and state.current_mode() != mode_id:
        try:
            state.check_mode(mode_id)
            await _apply_mode(live, mode_id)
        except (DomainError, RpcError) as exc:
            log.warning("kept mode %r not re-applied: %s", mode_id, exc)
    for config_id, value in chosen.get("config", {}).items():
        if not state.differs(config_id, value):
            continue
        try:
            state.check_value(config_id, value)
            await _apply_config(live, config_id, value)
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
        live.services.writer.submit(
            live.id, [Draft("system", as_json(content))], [_persist(live, None)]
        )
    live.controls_started = True


async def apply_create_choices(
    live: LiveSession, mode_id: str | None, config: dict[str, JsonValue]
) -> None:
    """``modeId`` and ``config`` of a create request, right after session/new. A choice
    the agent does not offer (422) discards the session: it was never created."""
    try:
        if mode_id is not None:
            await set_mode(live, mode_id)
        for config_id, value in config.items():
            await set_config(live, config_id, value)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await live.stop("cancelled")

            async def delete(db: Any) -> None:
                await session_store.delete_session(db, live.id)

            await live.services.writer.submit(None, (), [delete]).wait()
            await log_active_count(live.services, "session refused: controls", live.id)
        raise
