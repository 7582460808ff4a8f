"""The WebSocket stream: hello → replay after the cursor → live, and client commands."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import anyio
import orjson
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from agent_bridge.jsontypes import JsonObject, JsonValue
from server import metrics, shapes
from server.sessions import DomainError, MessageRow, NotFound, SessionRecord, current_actor
from server.stream.frames import ack_frame, error_frame, stored_frame
from server.web.access import authorize_command
from server.web.auth import forwarded_credentials
from server.web.bodies import decode
from server.web.credential import Credential, until_revoked
from server.web.errors import ApiError
from server.web.jsonresp import dumps
from server.web.routes.client_tools import client_tool_command
from server.web.routes.controls import controls_command, elicitation_command
from server.web.routes.prompts import submit_prompt
from server.web.state import AppState, app_state
from server.web.views import session_view
from server.web.ws_liveness import watch
from server.web.ws_sender import FrameSender

log = logging.getLogger("agent_sessions.ws")

# Messages per replay page: one read transaction and one socket write each (under a
# megabyte of frames for flood text chunks).
REPLAY_PAGE = 2000
CLOSE_SECONDS = 5.0  # the most an oversized frame's 1009 waits for the socket
CLOSE_NOT_FOUND, CLOSE_BEHIND = 4404, 4008
CLOSE_BAD_REQUEST = 4400


async def stream(websocket: WebSocket) -> None:
    state = app_state(websocket)
    await websocket.accept()  # token and Origin were checked by server.web.security's middlewares
    try:
        after = int(websocket.query_params.get("after", "0"))
        if after < 0:
            raise ValueError
        session_id = _uuid(websocket.path_params["session_id"])
    except (ApiError, ValueError):
        await websocket.close(CLOSE_NOT_FOUND, "unknown session")
        return
    if state.sessions.shutting_down:
        await websocket.close(1001, "server shutting down")
        return
    # Watched from here on: a revocation during the replay closes the socket after it.
    credential = Credential.of(websocket, state.users.revocations)
    # Subscribed before anything is read: what is committed after the reads comes live
    # (frames the replay already sent are skipped by seq).
    sub = state.broker.subscribe(session_id)
    metrics.VIEWERS.inc()
    try:
        try:
            record, view, page = await _first_reads(state, session_id, after)
        except NotFound:
            await websocket.close(CLOSE_NOT_FOUND, "unknown session")
            return
        await websocket.send_text(
            dumps(
                {
                    "type": "hello",
                    "session": view,
                    "lastSeq": record.last_seq,
                }
            )
        )
        sender = FrameSender(websocket, state.settings.ws_stall_seconds)
        live = anyio.Event()
        async with anyio.create_task_group() as tg:
            scope = tg.cancel_scope
            tg.start_soon(_watch, sender, state.settings.ws_stall_seconds, scope)
            tg.start_soon(until_revoked, websocket, credential, scope)
            # Read from the start, the replay too: a viewer that closes during it is
            # noticed at once (its commands wait for the replay's end).
            tg.start_soon(_receive, websocket, sender, state, session_id, live, scope)
            try:
                cursor = await _replay(sender, state, session_id, after, page)
                await sender.send([b'{"type":"live"}'])
            except (WebSocketDisconnect, RuntimeError, OSError):
                scope.cancel()
                return
            live.set()
            await _send_live(websocket, sender, sub, cursor, scope)
    except WebSocketDisconnect:
        pass
    finally:
        credential.unwatch()
        state.broker.unsubscribe(sub)
        metrics.VIEWERS.dec()


async def _first_reads(
    state: AppState, session_id: str, after: int
) -> tuple[SessionRecord, dict[str, object], Sequence[MessageRow]]:
    """The session, its view for the hello and the first replay page, in one read
    transaction (one snapshot): a viewer's connect is mostly its reads."""
    page = await state.sessions.listing.first_replay(session_id, after, limit=REPLAY_PAGE)
    return (
        page.record,
        session_view(page.record, page.repo, state.sessions.sandbox_view()),
        page.rows,
    )


def _uuid(raw: str) -> str:
    import uuid

    try:
        return str(uuid.UUID(raw))
    except ValueError:
        raise ApiError.not_found("session", raw) from None


async def _replay(
    sender: FrameSender, state: AppState, session_id: str, after: int, page: Sequence[MessageRow]
) -> int:
    """Send ``page`` (the first, read with the hello), then the pages after it; the seq of
    the last message sent (``after`` if none)."""
    cursor = after
    while True:
        if page:
            await sender.send([stored_frame(row) for row in page])
            cursor = page[-1].seq
        if len(page) < REPLAY_PAGE:
            return cursor
        page = await state.sessions.listing.replay(session_id, cursor, limit=REPLAY_PAGE)


async def _send_live(
    websocket: WebSocket, sender: FrameSender, sub: Any, cursor: int, scope: anyio.CancelScope
) -> None:
    try:
        while True:
            frames = await sub.wait_frames()
            if not frames:
                if sub.overflowed:  # behind what it was sent, not waiting for the socket
                    sender.let_go("too far behind; reconnect with after=<last seq>")
                    if not sender.direct:  # another ASGI server: its own close
                        await websocket.close(CLOSE_BEHIND, "too far behind")
                    break
                await sender.writable()  # a close waits for the socket too, bounded here
                await websocket.close(1001, "server shutting down")
                break
            if frames[0][0] <= cursor:  # some were replayed already
                frames = deque((seq, frame) for seq, frame in frames if seq > cursor)
            if frames:
                await sender.send([frame for _seq, frame in frames])
                cursor = frames[-1][0]
    except (WebSocketDisconnect, RuntimeError, OSError):
        pass
    scope.cancel()


async def _watch(sender: FrameSender, stall_seconds: float, scope: anyio.CancelScope) -> None:
    if await watch(sender, stall_seconds):
        scope.cancel()


async def _receive(
    websocket: WebSocket,
    sender: FrameSender,
    state: AppState,
    session_id: str,
    live: anyio.Event,
    scope: anyio.CancelScope,
) -> None:
    try:
        await _receive_commands(websocket, sender, state, session_id, live)
    except WebSocketDisconnect:
        pass
    scope.cancel()


async def _receive_commands(
    websocket: WebSocket,
    sender: FrameSender,
    state: AppState,
    session_id: str,
    live: anyio.Event,
) -> None:
    limit = state.settings.max_ws_message_bytes
    prompt_limit = state.settings.max_prompt_frame_bytes  # a prompt may carry an image
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return
        data = message.get("text")
        if data is None and message.get("bytes") is not None:
            data = message["bytes"].decode("utf-8", "replace")
        if data is None:
            continue
        size = len(data.encode())
        if size > limit and (size > prompt_limit or not _is_prompt(data)):
            # Shielded: _send_live, failing to send a frame once the close has begun,
            # cancels the task group, which could otherwise drop the close unsent (the
            # viewer then waited for ever instead of getting 1009). Bounded: a viewer
            # that stopped reading never lets the close be written (it is cut off
            # instead), and an endless shield would hold a server's stop as long.
            with anyio.CancelScope(shield=True):
                await sender.writable(within=CLOSE_SECONDS)
                await websocket.close(1009, "message too big")
            return
        await live.wait()  # a command is answered after the replay and the "live" frame
        reply = await _command(state, session_id, data, websocket)
        await sender.send([orjson.dumps(reply)])  # bounded, as every frame after the hello


def _is_prompt(data: str) -> bool:
    try:
        command = orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return isinstance(command, dict) and command.get("type") == "prompt"


async def _command(state: AppState, session_id: str, data: str, websocket: WebSocket) -> JsonObject:
    ref = None
    try:
        try:
            command = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise ApiError(400, "invalid_json", "The frame is not valid JSON.") from None
        if not isinstance(command, dict):
            raise ApiError.validation("A command must be a JSON object.")
        ref = command.get("id")
        kind = command.get("type")
        if not isinstance(kind, str):  # a list or an object is no type (nor hashable)
            raise ApiError.validation("A command needs a string type.")
        await authorize_command(state, current_actor(), kind, session_id)  # as its REST twin
        owner = await state.cluster.owner_url(session_id) if kind in _REST_PATHS else None
        if owner is not None:
            credentials = forwarded_credentials(websocket, state.settings)
            return await _forward(state, owner, session_id, command, ref, credentials)
        if kind == "prompt":
            accepted = await submit_prompt(state, session_id, command)
            accepted.pop("sessionId", None)
            return ack_frame(ref, **accepted)
        if kind == "cancel":
            await state.sessions.cancel(session_id)
        elif kind == "permission":
            try:
                answer = decode(command, shapes.PermissionCommand)
            except ApiError:  # one sentence for both fields, as it always was
                raise ApiError.validation("requestId and optionId are required strings.") from None
            await state.sessions.answer_permission(session_id, answer.request_id, answer.option_id)
        elif kind in ("set_mode", "set_config"):
            await controls_command(state.sessions, session_id, command)
        elif kind == "elicitation":
            await elicitation_command(state.sessions, session_id, command)
        elif kind == "client_tool_result":
            await client_tool_command(state.sessions, session_id, command)
        else:
            raise ApiError.validation(f"Unknown command type {kind!r}.")
        return ack_frame(ref)
    except (ApiError, DomainError) as exc:
        return error_frame(ref, exc.code, exc.message)


# Each command's REST twin: method, path under the session, and the fields of its body.
_REST_PATHS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "prompt": ("POST", "prompt", ("text", "content", "queue")),
    "cancel": ("POST", "cancel", ()),
    "permission": ("POST", "permissions/{requestId}", ("optionId",)),
    "elicitation": ("POST", "elicitations/{requestId}", ("action", "content")),
    "set_mode": ("PUT", "mode", ("modeId",)),
    "set_config": ("PUT", "config/{configId}", ("value",)),
    "client_tool_result": ("POST", "client-tools/{callId}", ("result", "content", "isError")),
}


async def _forward(
    state: AppState,
    owner: str,
    session_id: str,
    command: JsonObject,
    ref: JsonValue,
    credentials: dict[str, str],
) -> JsonObject:
    """A command for a session another node runs: its REST twin, on that node."""
    kind = command["type"]
    method, template, fields = _REST_PATHS[kind]
    ids = {
        name: command.get(name) for name in ("requestId", "configId", "callId") if name in template
    }
    for name, value in ids.items():
        if not isinstance(value, str) or not value:
            raise ApiError.validation(f"{name} is required (a string).", field=name)
    path = f"/api/sessions/{session_id}/" + template.format(
        **{name: quote(str(value), safe="") for name, value in ids.items()}
    )
    body = {name: command[name] for name in fields if name in command}
    headers = {"content-type": "application/json", **credentials}
    try:
        answer = await state.cluster.forward(owner, method, path, "", headers, dumps(body).encode())
    except Exception:  # noqa: BLE001 - any transport failure
        raise ApiError(
            503,
            "owner_unavailable",
            "The node running this session does not answer; retry shortly.",
        ) from None
    if answer.status_code < 300:
        reply = ack_frame(ref)
        if kind == "prompt":
            accepted = answer.json()
            reply.update((k, accepted[k]) for k in ("runId", "queued", "position") if k in accepted)
        return reply
    error = answer.json().get("error", {})
    return error_frame(ref, error.get("code"), error.get("message"))


routes = [WebSocketRoute("/ws/sessions/{session_id}", stream)]
