"""A scripted model on loopback for the real agents (claude-agent-acp, codex-acp, gemini
``--acp``): one small Starlette app, run by uvicorn in a thread on 127.0.0.1:<free port>,
speaking with streaming the three provider APIs they call:

- Anthropic Messages: ``POST /v1/messages`` (SSE ``message_start`` … ``message_stop``,
  ``tool_use`` blocks); ``/v1/messages/count_tokens``.
- OpenAI Responses as codex calls it: ``POST /v1/responses`` (SSE ``response.created``,
  ``response.output_item.added``/``done`` with ``function_call`` items, ``response.completed``).
- Gemini: ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` (``functionCall``
  parts), ``:generateContent`` and ``:countTokens``.

A script is a list of replies, ``call(name, args)`` or ``say(text)``. Which reply a request
gets is read from the conversation it carries: the number of tool results in it (so a
retried request gets the same reply, and the agent's side requests do not use up the
script). A request that offers no tools is one of an agent's side requests (a title, a
next-speaker check, a routing choice): it gets ``SIDE_REPLY``, which parses as the JSON
those callers want. Every request is recorded, so a test can assert what the agent sent
back: ``issued`` (the tool calls sent) against ``answered()`` (the results that came back).

The script is generic: ``call(NAME, ARGS)`` makes the agent call any tool it offered, its
own (``Write``, ``run_shell_command``, ``exec_command``) or a client tool served over MCP
(claude names it ``mcp__<server>__NAME``; codex offers an MCP server's tools in a Responses
``namespace`` tool, listed here as ``NAMESPACE.NAME`` and called with the item's
``namespace`` field; ``offered_tools()`` lists the names an agent really offered, so a
test need not guess another agent's spelling). ``model.script`` can
be set after the server started, e.g. once the session's workspace path is known.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

# Gemini's next-speaker check and model router ask for JSON; claude's title request takes
# any text. One reply serves them all.
SIDE_REPLY = json.dumps(
    {"next_speaker": "user", "reasoning": "scripted", "model_choice": "flash", "title": "Scripted"}
)


@dataclass(frozen=True)
class Reply:
    """One model answer: a tool call (``tool`` and ``args``) or a final ``text``."""

    text: str = ""
    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)


def call(tool: str, args: dict[str, Any]) -> Reply:
    """The model asks the agent to call ``tool`` (the agent's own name for it, e.g.
    ``Write``, ``write_file``, ``shell``, or a client tool ``mcp__client-tools__NAME``)."""
    return Reply(tool=tool, args=args)


def say(text: str) -> Reply:
    return Reply(text=text)


@dataclass
class Recorded:
    api: str  # "anthropic", "openai" or "gemini"
    path: str
    body: dict[str, Any]
    main: bool  # it offered tools (a turn of the conversation, not a side request)


def _anthropic_results(body: dict[str, Any]) -> list[Any]:
    found = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            found += [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    return found


def _openai_results(body: dict[str, Any]) -> list[Any]:
    items = body.get("input", [])
    return [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]


def _gemini_results(body: dict[str, Any]) -> list[Any]:
    found = []
    for content in body.get("contents", []):
        parts = content.get("parts", [])
        found += [p["functionResponse"] for p in parts if "functionResponse" in p]
    return found


def _sse(event: str | None, data: dict[str, Any]) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


class FakeModel:
    """The server and its script; ``with FakeModel(script) as model:`` starts and stops it.
    ``model.url`` is its base URL (``http://127.0.0.1:<port>``)."""

    def __init__(self, script: list[Reply]) -> None:
        self.script = list(script)
        self.requests: list[Recorded] = []
        self.issued: list[str] = []  # the tool calls sent, by id (Gemini: by name)
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # -- what tests read -------------------------------------------------------------

    def main_requests(self, api: str | None = None) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.main and (api is None or r.api == api)]

    def tool_results(self) -> list[Any]:
        """The tool results the agent sent back, as its API carries them, read from the
        last request of the conversation (it repeats the earlier ones)."""
        mains = self.main_requests()
        if not mains:
            return []
        last = mains[-1]
        read = {"anthropic": _anthropic_results, "openai": _openai_results}.get(
            last.api, _gemini_results
        )
        return read(last.body)

    def answered(self) -> list[str]:
        """What the tool results of the last request answer: the call ids the model gave
        (Anthropic ``tool_use_id``, OpenAI ``call_id``) or, for Gemini, the tool names.
        After a scripted turn it equals ``issued``."""
        keys = ("tool_use_id", "call_id", "name")
        return [next(str(r[k]) for k in keys if k in r) for r in self.tool_results()]

    def offered_tools(self) -> list[str]:
        """The tool names the agent offered in its last turn request (how a test finds an
        agent's name for a client tool, e.g. ``mcp__client-tools__NAME`` for claude)."""
        mains = self.main_requests()
        if not mains:
            return []
        tools = mains[-1].body.get("tools", [])
        names = [t.get("name") for t in tools if t.get("type") != "namespace"]  # Anthropic, OpenAI
        for tool in tools:  # Gemini: {"functionDeclarations": [...]}
            names += [d.get("name") for d in tool.get("functionDeclarations", [])]
            if tool.get("type") == "namespace":  # codex: an MCP server's tools, OpenAI's kind
                names += [f"{tool['name']}.{t.get('name')}" for t in tool.get("tools", [])]
        return [str(n) for n in names if n]

    def _issue(self, key: str) -> str:
        with self._lock:
            if key not in self.issued:  # a retried request gets the same id again
                self.issued.append(key)
        return key

    def reply_for(self, results: int) -> Reply:
        if results < len(self.script):
            return self.script[results]
        return say("(the script has ended)")

    # -- lifecycle -------------------------------------------------------------------

    def __enter__(self) -> FakeModel:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        config = uvicorn.Config(
            self.app(), log_level="warning", lifespan="off", ws="none", access_log=False
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:  # uvicorn sets it once it listens
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the fake model server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)

    # -- the app ---------------------------------------------------------------------

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/messages", self.anthropic, methods=["POST"]),
                Route("/v1/messages/count_tokens", self.anthropic_count, methods=["POST"]),
                Route("/v1/responses", self.openai, methods=["POST"]),
                Route("/v1beta/models/{call:path}", self.gemini, methods=["POST"]),
                Route("/{rest:path}", self.unknown, methods=["GET", "POST", "HEAD"]),
            ]
        )

    def _record(self, api: str, request: Request, body: dict[str, Any], main: bool) -> None:
        with self._lock:
            self.requests.append(Recorded(api, request.url.path, body, main))

    async def unknown(self, request: Request) -> Response:
        self._record("unknown", request, {}, False)
        return JSONResponse({"error": {"message": "not scripted"}}, status_code=404)

    # Anthropic -------------------------------------------------------------------------

    async def anthropic_count(self, request: Request) -> Response:
        return JSONResponse({"input_tokens": 10})

    async def anthropic(self, request: Request) -> Response:
        body = await request.json()
        main = bool(body.get("tools"))
        self._record("anthropic", request, body, main)
        n = len(_anthropic_results(body))
        reply = self.reply_for(n) if main else say(SIDE_REPLY)
        if reply.tool is not None:
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": self._issue(f"toolu_{n:02d}"),
                "name": reply.tool,
                "input": {},
            }
            delta = {"type": "input_json_delta", "partial_json": json.dumps(reply.args)}
            stop, whole = "tool_use", {**block, "input": reply.args}
        else:
            block = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": reply.text}
            stop, whole = "end_turn", {"type": "text", "text": reply.text}
        usage = {"input_tokens": 10, "output_tokens": 5}
        message = {
            "id": f"msg_{len(self.requests):04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            return JSONResponse({**message, "content": [whole], "stop_reason": stop})

        async def events() -> AsyncIterator[bytes]:
            yield _sse("message_start", {"type": "message_start", "message": message})
            yield _sse(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": block},
            )
            yield _sse(
                "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
            )
            yield _sse("content_block_stop", {"type": "content_block_stop", "index": 0})
            yield _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            )
            yield _sse("message_stop", {"type": "message_stop"})

        return StreamingResponse(events(), media_type="text/event-stream")

    # OpenAI Responses (codex) ----------------------------------------------------------

    async def openai(self, request: Request) -> Response:
        body = await request.json()
        main = bool(body.get("tools"))
        self._record("openai", request, body, main)
        n = len(_openai_results(body))
        reply = self.reply_for(n) if main else say(SIDE_REPLY)
        rid = f"resp_{len(self.requests):04d}"
        if reply.tool is not None:
            namespace, _, name = reply.tool.rpartition(".")
            item: dict[str, Any] = {
                "type": "function_call",
                "id": f"fc_{n:02d}",
                "call_id": self._issue(f"call_{n:02d}"),
                "name": name,
                "arguments": json.dumps(reply.args),
                "status": "completed",
            }
            if namespace:  # a tool of a ``namespace`` tool (codex's MCP servers)
                item["namespace"] = namespace
        else:
            item = {
                "type": "message",
                "id": f"msg_{len(self.requests):04d}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }

        def frames() -> Iterator[dict[str, Any]]:
            yield {"type": "response.created", "response": {"id": rid}}
            yield {"type": "response.output_item.added", "output_index": 0, "item": item}
            if reply.tool is None:
                yield {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "delta": reply.text,
                }
            yield {"type": "response.output_item.done", "output_index": 0, "item": item}
            yield {
                "type": "response.completed",
                "response": {
                    "id": rid,
                    "usage": {
                        "input_tokens": 10,
                        "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens": 5,
                        "output_tokens_details": {"reasoning_tokens": 0},
                        "total_tokens": 15,
                    },
                },
            }

        async def events() -> AsyncIterator[bytes]:
            for frame in frames():
                yield _sse(frame["type"], frame)

        return StreamingResponse(events(), media_type="text/event-stream")

    # Gemini ----------------------------------------------------------------------------

    async def gemini(self, request: Request) -> Response:
        body = await request.json()
        method = request.path_params["call"].rsplit(":", 1)[-1]
        if method == "countTokens":
            return JSONResponse({"totalTokens": 10})
        main = method == "streamGenerateContent" and bool(body.get("tools"))
        self._record("gemini", request, body, main)
        n = len(_gemini_results(body))
        reply = self.reply_for(n) if main else say(SIDE_REPLY)
        part: dict[str, Any] = (
            {"functionCall": {"name": self._issue(reply.tool), "args": reply.args}}
            if reply.tool is not None
            else {"text": reply.text}
        )
        chunk = {
            "candidates": [
                {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": 5,
                "totalTokenCount": 15,
            },
            "modelVersion": "gemini-scripted",
        }
        if method != "streamGenerateContent":
            return JSONResponse(chunk)

        async def events() -> AsyncIterator[bytes]:
            yield _sse(None, chunk)

        return StreamingResponse(events(), media_type="text/event-stream")
