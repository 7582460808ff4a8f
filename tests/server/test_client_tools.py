"""API.md "Client tools", on a real uvicorn in this process (the demo agent, a
subprocess, reaches the MCP endpoint over loopback; the test reads the secret made for
it from the live session): registering and validating a set, kept on create, fork,
rewind and restart; the MCP transport itself (auth, sessions, versions, list_changed on
the event stream); calls answered over the WebSocket and REST, the first answer
winning, the answer returned to the agent; timeout, cancel, invalid input, 413, and the
server restarting mid-call."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import pytest
import uvicorn
from websockets.asyncio.client import ClientConnection, connect

from server.app import create_app
from server.mcp_host import LATEST_VERSION
from server.settings import Settings
from server.stream.writer import Draft
from server.web.state import AppState
from tests.conftest import LiveServer
from tests.helpers import demo_command, messages, wait_for_message

pytestmark = pytest.mark.anyio

WAIT = 30
SCHEMA = {
    "type": "object",
    "properties": {"colour": {"type": "string", "enum": ["red", "green"]}},
    "required": ["colour"],
}
PICK = {"name": "pick", "description": "Pick a colour in the page", "inputSchema": SCHEMA}
Json = dict[str, Any]


@dataclass
class Served:
    url: str
    http: httpx.AsyncClient
    state: AppState
    port: int

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"


@asynccontextmanager
async def serving(make_settings: Callable[..., Settings], **env: Any) -> AsyncIterator[Served]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
        app = create_app(make_settings(PORT=port, **env))
        server = uvicorn.Server(
            # as `agent-sessions serve` does: an agent's open MCP event stream is cut off
            # then (it ends with the agent, after uvicorn's wait for open responses)
            uvicorn.Config(
                app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=2
            )
        )
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.serve, [sock])
            with anyio.fail_after(WAIT):
                while not server.started:  # noqa: ASYNC110 - uvicorn offers no event for it
                    await anyio.sleep(0.01)
            url = f"http://127.0.0.1:{port}"
            async with httpx.AsyncClient(base_url=url, timeout=WAIT) as http:
                yield Served(url, http, app.state.agent_sessions, port)
            server.should_exit = True


@pytest.fixture
def serve(make_settings: Callable[..., Settings]) -> Callable[..., Any]:
    return lambda **env: serving(make_settings, **env)


async def new_session(served: Served, **body: Any) -> Json:
    repos = (await served.http.get("/api/repos")).json()["repos"]
    repo_id = next(r["id"] for r in repos if r["name"] == "demo")
    response = await served.http.post("/api/sessions", json={"repoId": repo_id, **body})
    assert response.status_code == 201, response.text
    return dict(response.json())


async def stored(served: Served, session_id: str, **params: Any) -> list[Json]:
    response = await served.http.get(
        f"/api/sessions/{session_id}/messages", params={"limit": 5000, **params}
    )
    assert response.status_code == 200, response.text
    return list(response.json()["messages"])


async def wait_for(
    served: Served, session_id: str, match: Callable[[Json], bool], timeout: float = WAIT
) -> Json:
    """Poll the stored log (with a deadline) until a message matches."""
    with anyio.fail_after(timeout):
        while True:
            for message in await stored(served, session_id):
                if match(message):
                    return message
            await anyio.sleep(0.02)


def client_tool(outcome: Any = None, **fields: Any) -> Callable[[Json], bool]:
    def match(message: Json) -> bool:
        content = message["content"]
        return (
            content["type"] == "client_tool"
            and content["outcome"] == outcome
            and all(content.get(k) == v for k, v in fields.items())
        )

    return match


def run_end(run_id: str) -> Callable[[Json], bool]:
    def match(message: Json) -> bool:
        content = message["content"]
        return (
            content["type"] == "run"
            and content["runId"] == run_id
            and (content["status"] != "running")
        )

    return match


async def start(served: Served, session_id: str, text: str) -> str:
    response = await served.http.post(f"/api/sessions/{session_id}/prompt", json={"text": text})
    assert response.status_code == 202, response.text
    return str(response.json()["runId"])


async def reply(served: Served, session_id: str, run_id: str, timeout: float = WAIT) -> str:
    await wait_for(served, session_id, run_end(run_id), timeout)
    return "".join(
        m["content"]["text"]
        for m in await stored(served, session_id, role="agent", partial="false")
        if m["content"]["type"] == "text" and m["runId"] == run_id
    )


def assert_error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code, response.text


# -- the set ----------------------------------------------------------------------------


async def test_a_set_is_validated_stored_and_kept_by_fork_and_rewind(
    serve: Callable[..., Any],
) -> None:
    async with serve() as served:
        session = await new_session(served)
        url = f"/api/sessions/{session['id']}/client-tools"
        assert (await served.http.get(url)).json() == {"tools": []}
        bad: list[Any] = [
            [{**PICK, "name": "has space"}],
            [{**PICK, "name": "x" * 65}],
            [PICK, PICK],
            [{**PICK, "inputSchema": {"type": "object", "properties": 5}}],
            [{**PICK, "inputSchema": {"type": "string"}}],
            [{**PICK, "inputSchema": "object"}],
            [{**PICK, "extra": 1}],
            [{**PICK, "name": f"t{i}"} for i in range(33)],
            "pick",
        ]
        for tools in bad:
            assert_error(await served.http.put(url, json={"tools": tools}), 422, "validation_error")
        assert_error(
            await served.http.put(url, json={"tools": [], "more": 1}), 422, "validation_error"
        )
        assert (await served.http.get(url)).json() == {"tools": []}
        many = [{**PICK, "name": f"t-{i}_X"} for i in range(32)]
        answer = await served.http.put(url, json={"tools": many})
        assert answer.status_code == 200 and answer.json() == {"tools": many}
        assert (await served.http.get(url)).json() == {"tools": many}
        unknown = "/api/sessions/00000000-0000-4000-8000-000000000000/client-tools"
        assert_error(await served.http.get(unknown), 404, "session_not_found")

        fork = await served.http.post(f"/api/sessions/{session['id']}/fork", json={})
        assert fork.status_code == 201, fork.text
        forked = fork.json()["id"]
        assert (await served.http.get(f"/api/sessions/{forked}/client-tools")).json()[
            "tools"
        ] == many
        rewind = await served.http.post(f"/api/sessions/{session['id']}/rewind", json={"toSeq": 1})
        assert rewind.status_code == 200, rewind.text
        assert (await served.http.get(url)).json()["tools"] == many

    async with serve() as served:  # the same database, a new server
        assert (await served.http.get(url)).json()["tools"] == many


async def test_create_takes_client_tools_and_offers_the_agent_its_server(
    serve: Callable[..., Any],
) -> None:
    async with serve(API_TOKEN="user-token-1") as served:
        served.http.headers["Authorization"] = "Bearer user-token-1"
        bad = await served.http.post(
            "/api/sessions",
            json={"repoId": "00000000-0000-4000-8000-000000000000", "clientTools": [{"name": 1}]},
        )
        assert_error(bad, 422, "validation_error")
        session = await new_session(served, clientTools=[PICK])
        assert "client-tools" in session["controls"]["mcpServers"]
        live = served.state.sessions.registry[session["id"]]
        offered = [s for s in live.client.mcp_servers if s["name"] == "client-tools"]
        assert len(offered) == 1 and offered[0]["type"] == "http"  # type: ignore[typeddict-item]
        server = dict(offered[0])
        assert server["url"] == f"{served.url}/mcp/sessions/{session['id']}"
        header = server["headers"][0]
        assert header["name"] == "Authorization" and "user-token-1" not in header["value"]
        assert header["value"] == f"Bearer {live.client_tools.secret}"

        plain = await new_session(served)  # no tools: no server, nothing changes
        assert "client-tools" not in plain["controls"]["mcpServers"]
        assert not served.state.sessions.registry[plain["id"]].client_tools.offered


async def test_an_agent_without_http_mcp_is_not_offered_them(serve: Callable[..., Any]) -> None:
    command = demo_command(DEMO_AGENT_MODE="no-http-mcp")
    async with serve(AGENT_COMMAND=command) as served:
        session = await new_session(served, clientTools=[PICK])
        assert {"name": "client-tools", "transport": "http", "offered": False} in session[
            "controls"
        ]["mcpServers"]
        run_id = await start(served, session["id"], 'client-tool pick {"colour": "red"}')
        assert "No client tools were offered" in await reply(served, session["id"], run_id)


# -- the MCP transport --------------------------------------------------------------------


async def mcp(
    served: Served,
    session_id: str,
    message: Json,
    secret: str,
    mcp_session: str | None = None,
    **headers: str,
) -> httpx.Response:
    sent = {"Accept": "application/json, text/event-stream"}
    if secret:
        sent["Authorization"] = f"Bearer {secret}"
    if mcp_session is not None:
        sent["Mcp-Session-Id"] = mcp_session
    sent.update(headers)
    return await served.http.post(f"/mcp/sessions/{session_id}", json=message, headers=sent)


def request(method: str, params: Json | None = None, id: int = 1) -> Json:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params or {}}


async def test_the_mcp_endpoint_speaks_streamable_http(serve: Callable[..., Any]) -> None:
    async with serve() as served:
        session = await new_session(served, clientTools=[PICK])
        sid = session["id"]
        secret = served.state.sessions.registry[sid].client_tools.secret
        init = request("initialize", {"protocolVersion": "2025-03-26", "capabilities": {}})

        for wrong in ("", "nope", secret + "x"):
            refused = await mcp(served, sid, init, wrong)
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        plain = await new_session(served)  # offered no server: nothing there
        assert (await mcp(served, plain["id"], init, secret)).status_code == 401

        answer = await mcp(served, sid, init, secret)
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"]["protocolVersion"] == "2025-03-26"
        assert answer.json()["result"]["capabilities"]["tools"] == {"listChanged": True}
        mcp_session = answer.headers["mcp-session-id"]
        newer = await mcp(
            served, sid, request("initialize", {"protocolVersion": "2099-01-01"}), secret
        )
        assert newer.json()["result"]["protocolVersion"] == LATEST_VERSION

        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await mcp(served, sid, note, secret, mcp_session)).status_code == 202
        listed = await mcp(served, sid, request("tools/list"), secret, mcp_session)
        assert listed.json() == {"jsonrpc": "2.0", "id": 1, "result": {"tools": [PICK]}}
        assert (await mcp(served, sid, request("tools/list"), secret)).status_code == 400
        assert (await mcp(served, sid, request("tools/list"), secret, "gone")).status_code == 404
        odd = await mcp(
            served, sid, request("tools/list"), secret, mcp_session, **{"MCP-Protocol-Version": "1"}
        )
        assert odd.status_code == 400
        assert (await mcp(served, sid, request("ping"), secret, mcp_session)).json()["result"] == {}
        unknown = await mcp(served, sid, request("resources/list"), secret, mcp_session)
        assert unknown.json()["error"]["code"] == -32601
        garbage = await served.http.post(
            f"/mcp/sessions/{sid}", content=b"{nope", headers={"Authorization": f"Bearer {secret}"}
        )
        assert garbage.status_code == 400 and garbage.json()["error"]["code"] == "invalid_json"

        # Input that does not fit the schema: a tool error, nothing stored.
        call = request("tools/call", {"name": "pick", "arguments": {"colour": 5}})
        invalid = await mcp(served, sid, call, secret, mcp_session, Accept="application/json")
        result = invalid.json()["result"]
        assert result["isError"] is True and "colour" in result["content"][0]["text"]
        missing = request("tools/call", {"name": "nothing", "arguments": {}})
        result = (
            await mcp(served, sid, missing, secret, mcp_session, Accept="application/json")
        ).json()
        assert result["result"]["isError"] is True
        assert not [m for m in await stored(served, sid) if m["content"]["type"] == "client_tool"]

        no_stream = await served.http.get(
            f"/mcp/sessions/{sid}",
            headers={"Authorization": f"Bearer {secret}", "Mcp-Session-Id": mcp_session},
        )
        assert no_stream.status_code == 405
        ended = await served.http.delete(
            f"/mcp/sessions/{sid}",
            headers={"Authorization": f"Bearer {secret}", "Mcp-Session-Id": mcp_session},
        )
        assert ended.status_code == 204
        assert (
            await mcp(served, sid, request("tools/list"), secret, mcp_session)
        ).status_code == 404


async def test_a_changed_set_is_announced_on_the_event_stream(serve: Callable[..., Any]) -> None:
    async with serve() as served:
        session = await new_session(served, clientTools=[PICK])
        sid = session["id"]
        secret = served.state.sessions.registry[sid].client_tools.secret
        init = request("initialize", {"protocolVersion": LATEST_VERSION})
        mcp_session = (await mcp(served, sid, init, secret)).headers["mcp-session-id"]
        headers = {
            "Authorization": f"Bearer {secret}",
            "Mcp-Session-Id": mcp_session,
            "Accept": "text/event-stream",
        }
        async with served.http.stream("GET", f"/mcp/sessions/{sid}", headers=headers) as events:
            assert events.status_code == 200
            assert events.headers["content-type"].startswith("text/event-stream")
            lines = events.aiter_lines()
            assert await anext(lines) == ": open"
            other = {**PICK, "name": "other"}
            put = await served.http.put(
                f"/api/sessions/{sid}/client-tools", json={"tools": [PICK, other]}
            )
            assert put.status_code == 200
            with anyio.fail_after(WAIT):
                data = ""
                async for line in lines:
                    if line.startswith("data: "):
                        data = line[6:]
                        break
            assert json.loads(data) == {
                "jsonrpc": "2.0",
                "method": "notifications/tools/list_changed",
            }
        listed = await mcp(served, sid, request("tools/list"), secret, mcp_session)
        assert [t["name"] for t in listed.json()["result"]["tools"]] == ["pick", "other"]


# -- calls -------------------------------------------------------------------------------


async def receive(ws: ClientConnection, timeout: float = WAIT) -> Json:
    with anyio.fail_after(timeout):
        return dict(json.loads(await ws.recv()))


async def receive_until(
    ws: ClientConnection, match: Callable[[Json], bool], timeout: float = WAIT
) -> Json:
    while True:
        frame = await receive(ws, timeout)
        if match(frame):
            return frame


def message_frame(match: Callable[[Json], bool]) -> Callable[[Json], bool]:
    return lambda frame: frame["type"] == "message" and match(frame["message"])


async def test_a_call_is_answered_over_the_websocket_and_the_first_answer_wins(
    serve: Callable[..., Any],
) -> None:
    async with serve() as served:
        session = await new_session(served, clientTools=[PICK])
        sid = session["id"]
        async with connect(f"{served.ws_url}/ws/sessions/{sid}") as ws:
            run_id = await start(served, sid, 'client-tool pick {"colour": "red"}')
            frame = await receive_until(ws, message_frame(client_tool(None)))
            asked = frame["message"]
            content = asked["content"]
            assert asked["runId"] == run_id and asked["role"] == "system"
            assert (content["name"], content["input"], content["result"], content["isError"]) == (
                "pick",
                {"colour": "red"},
                None,
                False,
            )
            call_id = content["callId"]
            command = {
                "type": "client_tool_result",
                "callId": call_id,
                "result": {"picked": "red", "by": "the page"},
                "id": "a1",
            }
            await ws.send(json.dumps(command))
            ack = await receive_until(ws, lambda f: f["type"] in ("ack", "error"))
            assert ack == {"type": "ack", "ref": "a1"}
            await ws.send(json.dumps({**command, "id": "a2"}))
            late = await receive_until(ws, lambda f: f["type"] in ("ack", "error"))
            assert late["error"]["code"] == "client_tool_already_answered"
        said = await reply(served, sid, run_id)
        assert "pick answered" in said and "the page" in said
        late_rest = await served.http.post(f"/api/sessions/{sid}/client-tools/{call_id}", json={})
        assert_error(late_rest, 409, "client_tool_already_answered")
        unknown = f"/api/sessions/{sid}/client-tools/00000000-0000-4000-8000-000000000000"
        assert_error(await served.http.post(unknown, json={}), 404, "client_tool_call_not_found")
        answered = await wait_for(served, sid, client_tool("answered", callId=call_id))
        assert answered["content"]["result"] == {"picked": "red", "by": "the page"}
        assert answered["content"]["by"] == {"via": "websocket", "user": None}
        tool = [m for m in await stored(served, sid, type="tool") if m["runId"] == run_id][-1]
        assert tool["content"]["status"] == "completed"
        assert tool["content"]["result"]["structuredContent"] == answered["content"]["result"]


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
@pytest.mark.parametrize("network", ["none", "proxy"])
async def test_a_sandboxed_agent_with_no_network_calls_its_client_tools(
    serve: Callable[..., Any], network: str
) -> None:
    """In a sandbox with a network of its own (loopback only) the agent's MCP client still
    reaches the session's MCP server at the URL it was given: the sandbox's forwarder
    listens at the server's port on the namespace's loopback and carries each request to
    the session's MCP relay (docs/client-tools.md)."""
    async with serve(AGENT_SANDBOX="on", AGENT_NETWORK=network) as served:
        session = await new_session(served, clientTools=[PICK])
        sid = session["id"]
        assert session["sandbox"] == {"enabled": True, "network": network}
        run_id = await start(served, sid, 'client-tool pick {"colour": "green"}')
        asked = await wait_for(served, sid, client_tool(None))
        call_id = asked["content"]["callId"]
        answer = {"result": {"picked": "green"}}
        response = await served.http.post(
            f"/api/sessions/{sid}/client-tools/{call_id}", json=answer
        )
        assert response.status_code == 200, response.text
        said = await reply(served, sid, run_id)
        assert "pick answered" in said and "green" in said, said
        host = served.state.sessions.registry[sid].client_tools
        assert host.isolated and host.lists >= 1


async def test_an_error_answer_over_rest_and_one_too_large(serve: Callable[..., Any]) -> None:
    async with serve(MAX_CLIENT_TOOL_RESULT_BYTES=200) as served:
        session = await new_session(served, clientTools=[PICK])
        sid = session["id"]
        run_id = await start(served, sid, 'client-tool pick {"colour": "green"}')
        call_id = (await wait_for(served, sid, client_tool(None)))["content"]["callId"]
        url = f"/api/sessions/{sid}/client-tools/{call_id}"
        assert_error(
            await served.http.post(url, json={"result": "x" * 300}), 413, "payload_too_large"
        )
        bad = await served.http.post(url, json={"content": "text"})
        assert_error(bad, 422, "validation_error")
        assert_error(await served.http.post(url, json={"isError": "yes"}), 422, "validation_error")
        content = [{"type": "text", "text": "the person closed the picker"}]
        answer = await served.http.post(url, json={"content": content, "isError": True})
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"callId": call_id, "outcome": "answered"}
        said = await reply(served, sid, run_id)
        assert "pick failed: the person closed the picker" in said
        ended = await wait_for(served, sid, client_tool("answered"))
        assert ended["content"]["isError"] is True and ended["content"]["content"] == content
        assert ended["content"]["by"]["via"] == "rest"


async def test_no_answer_in_time_is_a_tool_error(serve: Callable[..., Any]) -> None:
    async with serve(CLIENT_TOOL_TIMEOUT=0.5) as served:
        session = await new_session(served, clientTools=[PICK])
        run_id = await start(served, session["id"], 'client-tool pick {"colour": "red"}')
        said = await reply(served, session["id"], run_id)
        assert "pick failed: No client answered within 0.5 s" in said
        ended = await wait_for(served, session["id"], client_tool("timeout"))
        assert ended["content"]["isError"] is True


async def test_cancel_and_session_end_cancel_the_call(serve: Callable[..., Any]) -> None:
    async with serve() as served:
        session = await new_session(served, clientTools=[PICK])
        sid = session["id"]
        run_id = await start(served, sid, 'client-tool pick {"colour": "red"}')
        call_id = (await wait_for(served, sid, client_tool(None)))["content"]["callId"]
        assert (await served.http.post(f"/api/sessions/{sid}/cancel")).status_code == 202
        await wait_for(served, sid, client_tool("cancelled", callId=call_id))
        await wait_for(served, sid, run_end(run_id))
        late = await served.http.post(f"/api/sessions/{sid}/client-tools/{call_id}", json={})
        assert_error(late, 409, "client_tool_already_answered")

        await start(served, sid, 'client-tool pick {"colour": "green"}')
        second = await wait_for(
            served, sid, lambda m: client_tool(None)(m) and m["content"]["callId"] != call_id
        )
        assert (await served.http.delete(f"/api/sessions/{sid}")).status_code == 200
        await wait_for(served, sid, client_tool("cancelled", callId=second["content"]["callId"]))


def test_a_server_killed_mid_call_ends_it_server_restarted_when_it_starts_again(
    live_server: Callable[..., LiveServer],
) -> None:
    """A crash leaves the call's message pending in the database; start-up recovery ends
    it (the agent that waited died with the server), and a late answer is 409."""
    server = live_server()
    with httpx.Client(base_url=server.url, timeout=WAIT) as http:
        repo_id = http.get("/api/repos").json()["repos"][0]["id"]
        created = http.post("/api/sessions", json={"repoId": repo_id, "clientTools": [PICK]})
        assert created.status_code == 201, created.text
        sid = created.json()["id"]
        started = http.post(
            f"/api/sessions/{sid}/prompt", json={"text": 'client-tool pick {"colour": "red"}'}
        )
        assert started.status_code == 202
        asked = wait_for_message(http, sid, client_tool(None))  # type: ignore[arg-type]
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(WAIT)
    again = live_server()
    with httpx.Client(base_url=again.url, timeout=WAIT) as http:
        call_id = asked["content"]["callId"]
        ended = wait_for_message(http, sid, client_tool("server_restarted", callId=call_id))  # type: ignore[arg-type]
        assert ended["content"]["isError"] is True
        late = http.post(f"/api/sessions/{sid}/client-tools/{call_id}", json={"result": 1})
        assert_error(late, 409, "client_tool_already_answered")
        pending = [
            m
            for m in messages(http, sid, type="client_tool")  # type: ignore[arg-type]
            if m["content"]["callId"] == call_id
        ]
        assert [m["content"]["outcome"] for m in pending] == [None, "server_restarted"]


async def test_a_takeover_ends_only_the_calls_of_the_sessions_taken_over(
    serve: Callable[..., Any],
) -> None:
    """Another node died (lease takeover): the calls its sessions left waiting end
    ``server_restarted``; a call of a session that was not taken over keeps waiting."""
    async with serve() as served:
        taken, kept = (await new_session(served))["id"], (await new_session(served))["id"]
        writer = served.state.sessions.services.writer
        for sid in (taken, kept):
            asked = {
                "type": "client_tool",
                "callId": str(uuid.uuid4()),
                "name": "pick",
                "input": {"colour": "red"},
                "result": None,
                "isError": False,
                "outcome": None,
            }
            await writer.submit(sid, [Draft("system", asked)]).wait()
        await served.state.sessions.take_over({taken})
        ended = await wait_for(served, taken, client_tool("server_restarted"))
        assert ended["content"]["isError"] is True
        outcomes = [m["content"]["outcome"] for m in await stored(served, kept, type="client_tool")]
        assert outcomes == [None]


async def test_two_answers_at_once_one_wins(serve: Callable[..., Any]) -> None:
    """A REST answer and a WebSocket answer sent together: one is taken (200 / ack), the
    other is 409; one outcome is stored, and the agent gets the winner's result."""
    async with serve() as served:
        session = await new_session(served, clientTools=[PICK])
        sid = session["id"]
        run_id = await start(served, sid, 'client-tool pick {"colour": "red"}')
        call_id = (await wait_for(served, sid, client_tool(None)))["content"]["callId"]
        outcomes: dict[str, Any] = {}
        async with connect(f"{served.ws_url}/ws/sessions/{sid}") as ws:

            async def by_rest() -> None:
                response = await served.http.post(
                    f"/api/sessions/{sid}/client-tools/{call_id}", json={"result": "rest"}
                )
                outcomes["rest"] = response.status_code

            async def by_websocket() -> None:
                command = {"type": "client_tool_result", "callId": call_id, "result": "ws"}
                await ws.send(json.dumps({**command, "id": "w"}))
                frame = await receive_until(ws, lambda f: f["type"] in ("ack", "error"))
                outcomes["ws"] = 200 if frame["type"] == "ack" else frame["error"]["code"]

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(by_rest)
                tasks.start_soon(by_websocket)
        assert sorted(map(str, outcomes.values())) == ["200", "client_tool_already_answered"] or (
            sorted(map(str, outcomes.values())) == ["200", "409"]
        ), outcomes
        winner = "rest" if outcomes["rest"] == 200 else "ws"
        said = await reply(served, sid, run_id)
        assert f"pick answered: {winner}" in said
        ended = [
            m["content"]
            for m in await stored(served, sid, type="client_tool")
            if m["content"]["outcome"] is not None
        ]
        assert len(ended) == 1 and ended[0]["result"] == winner
