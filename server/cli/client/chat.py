"""The interactive part of ``agent-sessions chat``: one session over the WebSocket.

Line based, so it works on a terminal and with piped stdin alike: it reads a prompt line,
sends it, streams the agent's text as it arrives, shows tool calls and plans in one line
each, and asks about permission requests (numbered options) and the agent's questions
(``questions``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from typing import IO, Any

import anyio

from server.cli.client.api import Api, CliError
from server.cli.client.controls import Attachments
from server.cli.client.controls import run_command as control_command
from server.cli.client.questions import ask_client_tool, ask_elicitation
from server.cli.client.wire import JsonObject
from server.cli.client.workspace import run_command

PLAN_MARKS = {"completed": "[x]", "in_progress": "[~]"}
TOOL_MARKS = {
    "pending": "->",
    "in_progress": "..",
    "completed": "ok",
    "error": "!!",
    "cancelled": "--",
}

__all__ = ["Chat"]


class Chat:
    """The interactive loop over one WebSocket (reconnecting after a 4008 with its cursor)."""

    def __init__(self, api: Api, session: JsonObject, stdin: IO[str], stdout: IO[str]) -> None:
        self.api = api
        self.session = session
        self.attachments = Attachments()  # /attach PATH: for the next prompt
        self.stdin = stdin
        self.out = stdout
        self.interactive = stdin.isatty()
        self.cursor = int(session["lastSeq"])
        self.ws: Any = None
        self.refs = itertools.count(1)
        self.replies: JsonObject = {}
        self.waiting: set[str] = set()
        self.reply_ready = anyio.Event()
        self.run_id: str | None = None  # our running turn
        self.turn_done: anyio.Event | None = None
        self.ended: dict[str, str] = {}  # runs that ended → status
        self.streaming: str | None = None  # "text" while agent text chunks are printed
        self.tools: dict[str, str] = {}
        self.plan = ""
        self.gone: str | None = None  # why the stream ended for good

    # -- output -----------------------------------------------------------------------

    def write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def line(self, text: str) -> None:
        self.end_stream()
        self.write(text + "\n")

    def end_stream(self) -> None:
        if self.streaming is not None:
            self.write("\n")
            self.streaming = None

    async def read_line(self, prompt: str) -> str | None:
        """The next stdin line (None at EOF). Read in a daemon thread, so leaving while
        it waits (the server went away) never hangs the process at exit."""
        if self.interactive:
            self.write(prompt)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str] = loop.create_future()

        def deliver(line: str) -> None:
            if not future.done():
                future.set_result(line)

        def read() -> None:
            try:
                line = self.stdin.readline()
            except (OSError, ValueError):
                line = ""
            try:
                loop.call_soon_threadsafe(deliver, line)
            except RuntimeError:  # the loop is closed: we left meanwhile
                pass

        threading.Thread(target=read, name="stdin", daemon=True).start()
        line = await future
        return line.rstrip("\r\n") if line else None

    # -- the connection ---------------------------------------------------------------

    async def connect(self) -> None:
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidHandshake

        url = f"{self.api.ws_url}/ws/sessions/{self.session['id']}?after={self.cursor}"
        headers = self.api.headers or None
        try:
            self.ws = await connect(
                url, additional_headers=headers, max_size=None, compression=None
            )
        except (OSError, TimeoutError, InvalidHandshake):
            raise self.api.unreachable() from None

    async def run(self) -> None:
        await self.connect()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._receive, tg.cancel_scope)
                try:
                    await self.converse()
                finally:
                    tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            from websockets.exceptions import ConnectionClosed

            errors, rest = group.split(CliError)
            if errors is not None:
                raise errors.exceptions[0] from None
            lost, rest = group.split(ConnectionClosed)
            if rest is not None:
                raise
            self.gone = self.gone or "the connection to the server was lost"
        finally:
            self.end_stream()
            with anyio.move_on_after(5, shield=True):  # a server that does not answer
                await self.ws.close()
        if self.gone:
            raise CliError(self.gone)

    async def _receive(self, scope: anyio.CancelScope) -> None:
        from websockets.exceptions import ConnectionClosed

        while True:
            try:
                data = await self.ws.recv()
            except ConnectionClosed as exc:
                code = exc.rcvd.code if exc.rcvd is not None else None
                if code == 4008:  # fell behind: continue from the cursor
                    try:
                        await self.connect()
                        continue
                    except CliError as error:
                        self.gone = str(error)
                else:
                    self.gone = {
                        1001: "the server is shutting down; the session stays, resume it later",
                        4401: "the server refused the token: "
                        "pass --token or set AGENT_SESSIONS_TOKEN",
                        4404: f"no session with id {self.session['id']}",
                    }.get(code or 0, f"the connection to the server was lost (code {code})")
                scope.cancel()
                return
            await self.on_frame(json.loads(data))

    # -- the conversation -------------------------------------------------------------

    async def converse(self) -> None:
        s = self.session
        self.line(
            f"session {s['id']} on {s['repo']['name']} (agent {s['agentId']}); "
            "type a prompt, /diff, /commit MSG, /merge [BRANCH], /mode [ID], "
            "/config [ID VALUE], /attach PATH, /quit to leave"
        )
        while self.gone is None:
            text = await self.read_line("you> ")
            if text is None or text.strip() in ("/quit", "/exit"):
                return
            if not text.strip():
                continue
            answer = (
                await run_command(self.api, s["id"], text)
                or await control_command(self.api, s["id"], text)
                or self.attachments.command(text)
            )
            if answer is not None:
                self.line(answer)
                continue
            done = self.turn_done = anyio.Event()
            reply = await self.request({"type": "prompt", "text": text, **self.attachments.take()})
            if reply["type"] == "error":
                self.turn_done = None
                self.line(f"the server refused: {reply['error']['message']}")
                continue
            self.run_id = reply.get("runId")
            if self.run_id in self.ended:
                done.set()
            await done.wait()
            self.run_id = self.turn_done = None

    async def request(self, command: JsonObject) -> JsonObject:
        """Send a command and wait for its ack or error."""
        ref = f"c{next(self.refs)}"
        self.waiting.add(ref)
        await self.ws.send(json.dumps({**command, "id": ref}))
        while ref not in self.replies:
            await self.reply_ready.wait()
            self.reply_ready = anyio.Event()
        self.waiting.discard(ref)
        return dict(self.replies.pop(ref))

    async def send(self, command: JsonObject) -> None:
        """Send a command without waiting; a refusal is shown when it comes."""
        await self.ws.send(json.dumps({**command, "id": f"n{next(self.refs)}"}))

    async def on_frame(self, frame: JsonObject) -> None:
        kind = frame.get("type")
        if kind in ("ack", "error"):
            ref = str(frame.get("ref"))
            if ref in self.waiting:
                self.replies[ref] = frame
                self.reply_ready.set()
            elif kind == "error":
                self.line(f"the server refused: {frame['error']['message']}")
        elif kind == "message":
            message = frame["message"]
            if message["seq"] <= self.cursor:
                return
            self.cursor = message["seq"]
            await self.on_message(message)

    async def on_message(self, message: JsonObject) -> None:
        content = message["content"]
        kind = content.get("type")
        if kind == "text" and message["role"] == "agent":
            if content.get("partial"):
                if self.streaming is None:
                    self.write("agent: ")
                    self.streaming = "text"
                self.write(content.get("text", ""))
            elif self.streaming == "text":
                self.end_stream()
            else:
                self.line(f"agent: {content.get('text', '')}")
        elif kind == "text" and message["role"] == "user":
            if self.turn_done is None:
                self.line(f"user (another client): {content.get('text', '')}")
        elif kind == "thought" and not content.get("partial"):
            self.line(f"  (thinking) {_short(content.get('text', ''), 100)}")
        elif kind == "plan":
            self.show_plan(content.get("steps") or [])
        elif kind == "tool":
            self.show_tool(content)
        elif kind == "permission":
            await self.on_permission(content)
        elif kind == "elicitation" and content.get("mode") in ("form", "url"):
            await self.on_elicitation(content)
        elif kind == "client_tool":
            await self.on_client_tool(content)
        elif kind == "run":
            self.on_run(content)
        elif kind == "status":
            self.on_status(content)

    def show_plan(self, steps: list[JsonObject]) -> None:
        text = " | ".join(
            f"{PLAN_MARKS.get(s.get('status', ''), '[ ]')} {s.get('content', '')}" for s in steps
        )
        if text != self.plan:
            self.plan = text
            self.line(f"  plan: {text}")

    def show_tool(self, content: JsonObject) -> None:
        call_id, status = str(content.get("toolCallId")), str(content.get("status"))
        if self.tools.get(call_id) == status or status == "in_progress":
            return
        self.tools[call_id] = status
        name = content.get("tool") or call_id
        extra = ""
        if status == "error":
            extra = f": {_short(json.dumps(content.get('result')), 80)}"
        self.line(
            f"  {TOOL_MARKS.get(status, '->')} tool {name} ({content.get('kind')}) {status}{extra}"
        )

    async def on_permission(self, content: JsonObject) -> None:
        options = content.get("options") or []
        if content.get("outcome") is not None:
            outcome = content["outcome"]
            chosen = next(
                (o.get("name") for o in options if o.get("optionId") == outcome.get("optionId")),
                None,
            )
            self.line(f"  permission: {chosen or outcome.get('outcome')}")
            return
        if self.turn_done is None:
            self.line(
                f"  the agent asks permission for {content.get('tool')}; "
                "answer it in the client that prompted"
            )
            return
        self.line(
            f"? the agent asks permission: {content.get('tool') or content.get('toolCallId')}"
        )
        self.line(
            "  " + "   ".join(f"{i}) {o.get('name')}" for i, o in enumerate(options, start=1))
        )
        while True:
            answer = await self.read_line(f"choose 1-{len(options)}: ")
            if answer is None:
                self.line("(no answer: cancelling the turn)")
                await self.send({"type": "cancel"})
                return
            option = _pick(options, answer.strip())
            if option is not None:
                break
            self.line(f"  type a number from 1 to {len(options)}")
        await self.send(
            {
                "type": "permission",
                "requestId": content["requestId"],
                "optionId": option["optionId"],
            }
        )

    async def on_elicitation(self, content: JsonObject) -> None:
        outcome = content.get("outcome")
        if outcome is not None:
            self.line(f"  question answered: {outcome.get('action')}")
        elif self.turn_done is None:
            self.line("  the agent asks a question; answer it in the client that prompted")
        else:
            await self.send(await ask_elicitation(content, self.read_line, self.line))

    async def on_client_tool(self, content: JsonObject) -> None:
        outcome = content.get("outcome")
        if outcome is not None:
            self.line(f"  client tool {content.get('name')}: {outcome}")
        elif self.turn_done is None:
            self.line("  the agent waits on a client tool; answer it in the client that prompted")
        else:
            await self.send(await ask_client_tool(content, self.read_line, self.line))

    def on_run(self, content: JsonObject) -> None:
        status = content.get("status")
        if status == "running":
            self.tools.clear()
            self.plan = ""
            return
        run_id = str(content.get("runId"))
        self.ended[run_id] = str(status)
        if status != "completed":
            self.line(f"(turn {status})")
        else:
            self.end_stream()
        if run_id == self.run_id and self.turn_done is not None:
            self.turn_done.set()

    def on_status(self, content: JsonObject) -> None:
        status, reason = content.get("status"), content.get("reason")
        if reason == "rewind":
            detail = content.get("detail") or {}
            self.line(f"(history rewound to seq {detail.get('toSeq')})")
        elif status != "active":
            self.gone = f"the session is now {status} ({reason})"
            if self.turn_done is not None:
                self.turn_done.set()


def _short(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _pick(options: list[JsonObject], answer: str) -> JsonObject | None:
    if answer.isdigit() and 1 <= int(answer) <= len(options):
        return options[int(answer) - 1]
    return next((o for o in options if answer in (o.get("optionId"), o.get("name"))), None)


# -- argparse ------------------------------------------------------------------------------
