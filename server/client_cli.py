"""The client commands of ``agent-sessions``: ``sessions``, ``chat`` and ``export``.

They talk to a running server (``--url``, default http://127.0.0.1:8000) over its HTTP
API and WebSocket stream, sending ``API_TOKEN`` from the environment as a bearer token.
Conversation goes to stdout; progress and errors go to stderr, in plain words. Exit
codes: 0 done, 1 the server refused or could not be reached, 130 interrupted.

``chat`` is line based, so it works on a terminal and with piped stdin alike: it reads a
prompt line, sends it, streams the agent's text as it arrives, shows tool calls and plans
in one line each, and asks about permission requests (the options are numbered; type the
number). It reads the next prompt once the turn ended; EOF or ``/quit`` leaves (the session
stays active: ``chat --resume ID`` continues it).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import threading
from pathlib import Path
from typing import IO, Any

import anyio

__all__ = ["CliError", "add_commands"]

DEFAULT_URL = "http://127.0.0.1:8000"
STATUSES = ("active", "completed", "cancelled", "error")
PLAN_MARKS = {"completed": "[x]", "in_progress": "[~]"}
TOOL_MARKS = {"pending": "->", "in_progress": "..", "completed": "ok", "error": "!!", "cancelled": "--"}


class CliError(Exception):
    """A failure to tell the user in one plain sentence."""


# -- HTTP --------------------------------------------------------------------------------


def describe_refusal(status: int, body: Any, headers: Any) -> str:
    """An error response in plain words."""
    found = body.get("error") if isinstance(body, dict) else None
    error: dict[str, Any] = found if isinstance(found, dict) else {}
    message = str(error.get("message") or f"HTTP {status}").rstrip(".")
    details = error.get("details")
    if status == 429:
        limit = details.get("limit", "?") if isinstance(details, dict) else "?"
        retry = headers.get("retry-after", "60")
        return f"the server refused: too many active sessions (limit {limit}); try again in {retry} s"
    if status == 401:
        return "the server refused: it needs a valid token; set API_TOKEN to the server's token"
    if status == 502:
        return f"the agent could not start: {message}"
    if status == 404:
        return f"not found: {message}"
    return f"the server refused: {message}"


class Api:
    """A small synchronous client for the JSON API."""

    def __init__(self, url: str, token: str | None) -> None:
        try:
            import httpx
        except ImportError:  # pragma: no cover - httpx ships with the project
            raise CliError("the client commands need httpx: pip install httpx") from None
        self.url = url.rstrip("/")
        self.token = token
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._httpx = httpx
        self.client = httpx.Client(base_url=self.url, headers=self.headers, timeout=120)

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.client.close()

    def unreachable(self) -> CliError:
        return CliError(f"cannot reach the server at {self.url}: is `agent-sessions serve` running there?")

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self.client.request(method, path, **kwargs)
        except self._httpx.TransportError:
            raise self.unreachable() from None
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = None
            raise CliError(describe_refusal(response.status_code, body, response.headers))
        return response.json() if response.content else None

    def stream_to(self, path: str, out: IO[bytes]) -> None:
        try:
            with self.client.stream("GET", path) as response:
                if response.status_code >= 400:
                    response.read()
                    try:
                        body = response.json()
                    except ValueError:
                        body = None
                    raise CliError(describe_refusal(response.status_code, body, response.headers))
                for chunk in response.iter_bytes():
                    out.write(chunk)
                out.flush()
        except self._httpx.TransportError:
            raise self.unreachable() from None

    @property
    def ws_url(self) -> str:
        if self.url.startswith("https://"):
            return "wss://" + self.url[len("https://"):]
        return "ws://" + self.url.removeprefix("http://")


def find_repo(api: Api, spec: str, *, register: bool) -> dict[str, Any]:
    """A registered repository by id, name or path; registered first if ``register``."""
    repos = api.call("GET", "/api/repos")["repos"]
    local = Path(spec).expanduser()
    resolved = str(local.resolve()) if local.exists() else None
    for repo in repos:
        if spec in (repo["id"], repo["name"], repo["path"]) or (resolved and repo["path"] == resolved):
            return dict(repo)
    if not register:
        raise CliError(f"no registered repository matches {spec!r}")
    repo = api.call("POST", "/api/repos", json={"path": resolved or spec})
    print(f"registered repository {repo['path']}", file=sys.stderr)
    return dict(repo)


# -- sessions and export ----------------------------------------------------------------


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows)
    return "\n".join(line.rstrip() for line in lines)


def cmd_sessions(args: argparse.Namespace, api: Api) -> None:
    params: dict[str, Any] = {"limit": args.limit}
    if args.status:
        params["status"] = args.status
    if args.repo:
        params["repoId"] = find_repo(api, args.repo, register=False)["id"]
    page = api.call("GET", "/api/sessions", params=params)
    sessions = page["sessions"]
    if not sessions:
        print("no sessions", file=sys.stderr)
        return
    rows = [["ID", "STATUS", "REPO", "AGENT", "SEQ", "UPDATED", "TITLE"]]
    for s in sessions:
        title = " ".join(filter(None, [s["title"], "(copy)" if s.get("forkedFrom") else None]))
        rows.append([s["id"], s["status"], s["repo"]["name"], s["agentId"], str(s["lastSeq"]),
                     (s["updatedAt"] or "")[:19].replace("T", " "), title])
    print(_table(rows))
    if page["total"] > len(sessions):
        print(f"({len(sessions)} of {page['total']}; use --limit for more)", file=sys.stderr)


def cmd_export(args: argparse.Namespace, api: Api) -> None:
    if args.output:
        with open(args.output, "wb") as out:
            api.stream_to(f"/api/sessions/{args.session_id}/export", out)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        api.stream_to(f"/api/sessions/{args.session_id}/export", sys.stdout.buffer)


# -- chat --------------------------------------------------------------------------------


def _last_prompt_point(api: Api, session_id: str) -> int:
    """The seq just before the last user prompt: what ``--overwrite`` drops by default."""
    last = None
    after = 0
    while True:
        page = api.call("GET", f"/api/sessions/{session_id}/messages",
                        params={"after": after, "role": "user", "limit": 5000})
        if page["messages"]:
            last = page["messages"][-1]["seq"]
        if page["nextAfter"] is None:
            break
        after = page["nextAfter"]
    if last is None:
        raise CliError("the session has no prompt to overwrite; pass --from-point SEQ")
    return int(last) - 1


def open_chat_session(args: argparse.Namespace, api: Api) -> dict[str, Any]:
    """Create, fetch, fork or rewind the session ``chat`` talks to."""
    if args.repo:
        repo = find_repo(api, args.repo, register=True)
        body: dict[str, Any] = {"repoId": repo["id"]}
        if args.agent:
            body["agentId"] = args.agent
        if args.title:
            body["title"] = args.title
        print(f"starting an agent on {repo['name']} ...", file=sys.stderr)
        session: dict[str, Any] = api.call("POST", "/api/sessions", json=body)
        print(f"created session {session['id']}", file=sys.stderr)
        return session
    if args.copy:
        body = {} if args.to_point is None else {"uptoSeq": args.to_point}
        if args.title:
            body["title"] = args.title
        point = "the end" if args.to_point is None else f"seq {args.to_point}"
        print(f"copying session {args.copy} up to {point} ...", file=sys.stderr)
        session = api.call("POST", f"/api/sessions/{args.copy}/fork", json=body)
        print(f"created session {session['id']} (a copy; the agent gets the copied conversation "
              "with your first prompt)", file=sys.stderr)
        return session
    if args.overwrite:
        to_seq = args.from_point if args.from_point is not None else _last_prompt_point(api, args.overwrite)
        session = api.call("POST", f"/api/sessions/{args.overwrite}/rewind", json={"toSeq": to_seq})
        print(f"rewound session {session['id']} to seq {to_seq}; later messages are kept for audit only",
              file=sys.stderr)
        return session
    session = api.call("GET", f"/api/sessions/{args.resume}")
    session.pop("messages", None)
    return session


def _check_chat_options(args: argparse.Namespace) -> None:
    pairs = [("--to-point", args.to_point, args.copy, "--copy"),
             ("--from-point", args.from_point, args.overwrite, "--overwrite"),
             ("--agent", args.agent, args.repo, "--repo"),
             ("--title", args.title, args.repo or args.copy, "--repo or --copy")]
    for option, value, needed, which in pairs:
        if value is not None and not needed:
            raise CliError(f"{option} goes with {which}")


def cmd_chat(args: argparse.Namespace, api: Api) -> None:
    _check_chat_options(args)
    session = open_chat_session(args, api)
    if session["status"] != "active":
        raise CliError(f"session {session['id']} is {session['status']}; it takes no prompts. "
                       f"Continue from a copy: agent-sessions chat --copy {session['id']}")
    chat = Chat(api, session, sys.stdin, sys.stdout)
    anyio.run(chat.run)
    print(f"left session {session['id']}; it stays active. Continue with: "
          f"agent-sessions chat --resume {session['id']}", file=sys.stderr)


class Chat:
    """The interactive loop over one WebSocket (reconnecting after a 4008 with its cursor)."""

    def __init__(self, api: Api, session: dict[str, Any], stdin: IO[str], stdout: IO[str]) -> None:
        self.api = api
        self.session = session
        self.stdin = stdin
        self.out = stdout
        self.interactive = stdin.isatty()
        self.cursor = int(session["lastSeq"])
        self.ws: Any = None
        self.refs = itertools.count(1)
        self.replies: dict[str, Any] = {}
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
            self.ws = await connect(url, additional_headers=headers, max_size=None, compression=None)
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
            with anyio.CancelScope(shield=True):
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
                        4401: "the server refused the token: set API_TOKEN to the server's token",
                        4404: f"no session with id {self.session['id']}",
                    }.get(code or 0, f"the connection to the server was lost (code {code})")
                scope.cancel()
                return
            await self.on_frame(json.loads(data))

    # -- the conversation -------------------------------------------------------------

    async def converse(self) -> None:
        s = self.session
        self.line(f"session {s['id']} on {s['repo']['name']} (agent {s['agentId']}); "
                  "type a prompt, /quit to leave")
        while self.gone is None:
            text = await self.read_line("you> ")
            if text is None or text.strip() in ("/quit", "/exit"):
                return
            if not text.strip():
                continue
            done = self.turn_done = anyio.Event()
            reply = await self.request({"type": "prompt", "text": text})
            if reply["type"] == "error":
                self.turn_done = None
                self.line(f"the server refused: {reply['error']['message']}")
                continue
            self.run_id = reply.get("runId")
            if self.run_id in self.ended:
                done.set()
            await done.wait()
            self.run_id = self.turn_done = None

    async def request(self, command: dict[str, Any]) -> dict[str, Any]:
        """Send a command and wait for its ack or error."""
        ref = f"c{next(self.refs)}"
        self.waiting.add(ref)
        await self.ws.send(json.dumps({**command, "id": ref}))
        while ref not in self.replies:
            await self.reply_ready.wait()
            self.reply_ready = anyio.Event()
        self.waiting.discard(ref)
        return dict(self.replies.pop(ref))

    async def send(self, command: dict[str, Any]) -> None:
        """Send a command without waiting; a refusal is shown when it comes."""
        await self.ws.send(json.dumps({**command, "id": f"n{next(self.refs)}"}))

    async def on_frame(self, frame: dict[str, Any]) -> None:
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

    async def on_message(self, message: dict[str, Any]) -> None:
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
        elif kind == "run":
            self.on_run(content)
        elif kind == "status":
            self.on_status(content)

    def show_plan(self, steps: list[dict[str, Any]]) -> None:
        text = " | ".join(f"{PLAN_MARKS.get(s.get('status', ''), '[ ]')} {s.get('content', '')}" for s in steps)
        if text != self.plan:
            self.plan = text
            self.line(f"  plan: {text}")

    def show_tool(self, content: dict[str, Any]) -> None:
        call_id, status = str(content.get("toolCallId")), str(content.get("status"))
        if self.tools.get(call_id) == status or status == "in_progress":
            return
        self.tools[call_id] = status
        name = content.get("tool") or call_id
        extra = ""
        if status == "error":
            extra = f": {_short(json.dumps(content.get('result')), 80)}"
        self.line(f"  {TOOL_MARKS.get(status, '->')} tool {name} ({content.get('kind')}) {status}{extra}")

    async def on_permission(self, content: dict[str, Any]) -> None:
        options = content.get("options") or []
        if content.get("outcome") is not None:
            outcome = content["outcome"]
            chosen = next((o.get("name") for o in options if o.get("optionId") == outcome.get("optionId")), None)
            self.line(f"  permission: {chosen or outcome.get('outcome')}")
            return
        if self.turn_done is None:
            self.line(f"  the agent asks permission for {content.get('tool')}; "
                      "answer it in the client that prompted")
            return
        self.line(f"? the agent asks permission: {content.get('tool') or content.get('toolCallId')}")
        self.line("  " + "   ".join(f"{i}) {o.get('name')}" for i, o in enumerate(options, start=1)))
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
        await self.send({"type": "permission", "requestId": content["requestId"], "optionId": option["optionId"]})

    def on_run(self, content: dict[str, Any]) -> None:
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

    def on_status(self, content: dict[str, Any]) -> None:
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


def _pick(options: list[dict[str, Any]], answer: str) -> dict[str, Any] | None:
    if answer.isdigit() and 1 <= int(answer) <= len(options):
        return options[int(answer) - 1]
    return next((o for o in options if answer in (o.get("optionId"), o.get("name"))), None)


# -- argparse ------------------------------------------------------------------------------


def _run(command: Any) -> Any:
    def run(args: argparse.Namespace) -> None:
        try:
            with Api(args.url, os.environ.get("API_TOKEN") or None) as api:
                command(args, api)
        except CliError as exc:
            print(f"agent-sessions: {exc}", file=sys.stderr)
            raise SystemExit(1) from None
        except KeyboardInterrupt:
            print("\nagent-sessions: interrupted", file=sys.stderr)
            raise SystemExit(130) from None

    return run


def _status_list(value: str) -> str:
    bad = [v for v in value.split(",") if v.strip() not in STATUSES]
    if bad:
        raise argparse.ArgumentTypeError(f"status must be among {', '.join(STATUSES)}")
    return value


def add_commands(sub: Any) -> None:
    """Register ``sessions``, ``chat`` and ``export`` on the main parser's subparsers."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", default=DEFAULT_URL, help=f"the server (default {DEFAULT_URL}); "
                        "API_TOKEN from the environment is sent as a bearer token")

    p = sub.add_parser("sessions", parents=[common], help="list sessions")
    p.add_argument("--status", type=_status_list, help="comma-separated: active,completed,cancelled,error")
    p.add_argument("--repo", help="repository id, name or path")
    p.add_argument("--limit", type=int, default=20)
    p.set_defaults(func=_run(cmd_sessions))

    p = sub.add_parser("chat", parents=[common], help="chat with an agent in a terminal")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--repo", help="start a new session on this repository (path, name or id; "
                       "registered if needed)")
    which.add_argument("--resume", metavar="ID", help="continue a session")
    which.add_argument("--copy", metavar="ID", help="continue a copy (fork) of a session")
    which.add_argument("--overwrite", metavar="ID", help="rewind a session, then continue it")
    p.add_argument("--to-point", type=int, metavar="SEQ", help="with --copy: copy the messages up to SEQ")
    p.add_argument("--from-point", type=int, metavar="SEQ", help="with --overwrite: keep the messages up "
                   "to SEQ and continue from there (default: drop the last prompt and its answer)")
    p.add_argument("--agent", help="with --repo: the agent id (default: the server's default agent)")
    p.add_argument("--title", help="with --repo or --copy: the new session's title")
    p.set_defaults(func=_run(cmd_chat))

    p = sub.add_parser("export", parents=[common], help="write a session as NDJSON")
    p.add_argument("session_id", metavar="ID")
    p.add_argument("-o", "--output", help="a file (default: stdout)")
    p.set_defaults(func=_run(cmd_export))
