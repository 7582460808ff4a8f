"""The broker on its own: publishing never waits, a viewer that cannot keep up is marked
overflowed (its endpoint closes it with 4008) without slowing the others; and through
the WebSocket endpoint, such a viewer is closed with 4008 and catches up with its cursor."""

from __future__ import annotations

import inspect

import anyio
import pytest
from starlette.testclient import TestClient

from server.stream.broker import Broker
from tests.helpers import create_session, messages, prompt, run_ended, wait_for_message
from tests.server.test_ws import close_code, is_run_end, open_stream, receive_until

pytestmark = pytest.mark.anyio


def test_publish_is_plain_synchronous_code() -> None:
    # It cannot await: a slow viewer can never hold up the writer that publishes.
    assert not inspect.iscoroutinefunction(Broker.publish)
    assert not inspect.iscoroutinefunction(Broker.close_all)


async def test_a_full_queue_overflows_that_viewer_only() -> None:
    broker = Broker(queue_size=3)
    slow, fast = broker.subscribe("s"), broker.subscribe("s")
    broker.publish("s", [(1, "a"), (2, "b")])
    assert list(await fast.wait_frames()) == [(1, "a"), (2, "b")]  # fast reads; slow does not
    broker.publish("s", [(3, "c"), (4, "d")])  # slow would hold 4 > 3
    assert slow.overflowed and len(slow) == 0  # its frames are dropped, not kept growing
    assert not fast.overflowed
    assert list(await fast.wait_frames()) == [(3, "c"), (4, "d")]
    assert list(await slow.wait_frames()) == []  # nothing: the endpoint closes it (4008)
    broker.publish("s", [(5, "e")])
    assert len(slow) == 0  # an overflowed viewer gets nothing more
    assert list(await fast.wait_frames()) == [(5, "e")]


async def test_frames_of_other_sessions_do_not_reach_a_viewer() -> None:
    broker = Broker()
    sub = broker.subscribe("a")
    broker.publish("b", [(1, "x")])
    broker.publish("a", [(1, "y")])
    assert list(await sub.wait_frames()) == [(1, "y")]


async def test_a_waiting_viewer_wakes_on_publish_and_on_close() -> None:
    broker = Broker()
    sub = broker.subscribe("s")
    got: list[object] = []
    async with anyio.create_task_group() as tg:

        async def read() -> None:
            got.append(list(await sub.wait_frames()))
            got.append(list(await sub.wait_frames()))

        tg.start_soon(read)
        await anyio.wait_all_tasks_blocked()
        broker.publish("s", [(1, "a")])
        await anyio.wait_all_tasks_blocked()
        broker.close_all()
    assert got == [[(1, "a")], []]
    assert sub.closed and not sub.overflowed


def test_unsubscribe_forgets_the_viewer() -> None:
    broker = Broker()
    sub = broker.subscribe("s")
    assert broker.has_subscribers("s") and broker.viewer_count == 1
    broker.unsubscribe(sub)
    broker.unsubscribe(sub)  # twice is harmless
    assert not broker.has_subscribers("s") and broker.viewer_count == 0


def test_a_viewer_that_fell_behind_is_closed_4008_and_catches_up_with_its_cursor(
    client: TestClient, demo_repo_id: str
) -> None:
    session = create_session(client, demo_repo_id)
    sid = session["id"]
    broker = client.app.state.agent_sessions.broker  # type: ignore[attr-defined]
    with client.websocket_connect(f"/ws/sessions/{sid}") as ws:
        _hello, replay = open_stream(ws)
        cursor = replay[-1]["seq"] if replay else 0
        run_id = prompt(client, sid, "hello")
        frames = receive_until(ws, is_run_end(run_id))
        cursor = max([cursor, *(f["message"]["seq"] for f in frames if f["type"] == "message")])
        broker.close_all("behind")  # what a full queue does to every viewer of the session
        assert close_code(ws) == 4008
    # While it was away, another turn ran; reconnecting after its cursor misses nothing.
    second = prompt(client, sid, "hello again")
    wait_for_message(client, sid, run_ended(second))
    stored = [m for m in messages(client, sid) if m["seq"] > cursor]
    with client.websocket_connect(f"/ws/sessions/{sid}?after={cursor}") as ws:
        _hello, replay = open_stream(ws)
    assert [m["seq"] for m in replay] == [m["seq"] for m in stored]
    assert replay and replay[0]["seq"] == cursor + 1
    assert any(run_ended(second)(m) for m in replay)  # the turn it missed, to its end
