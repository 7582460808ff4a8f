"""The scripted model of ``fake_model.py`` on its own, over real HTTP: each of its three
APIs streams the scripted tool call first, the final text once a tool result comes back,
and a side request (no tools) leaves the script where it was."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.peers.fake_model import SIDE_REPLY, FakeModel, call, say

ARGS = {"path": "a.txt", "content": "x"}


@pytest.fixture
def model() -> Iterator[FakeModel]:
    with FakeModel([call("write", ARGS), say("Done.")]) as fake:
        yield fake


def events(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    lines = response.text.splitlines()
    return [json.loads(line[len("data: ") :]) for line in lines if line.startswith("data: ")]


def test_anthropic_messages(model: FakeModel) -> None:
    tools = [{"name": "write", "input_schema": {"type": "object"}}]
    user = {"role": "user", "content": "go"}
    first = events(
        httpx.post(
            f"{model.url}/v1/messages",
            json={"stream": True, "tools": tools, "messages": [user]},
        )
    )
    assert [e["type"] for e in first] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    block = first[1]["content_block"]
    assert (block["type"], block["name"]) == ("tool_use", "write")
    assert json.loads(first[2]["delta"]["partial_json"]) == ARGS
    assert first[4]["delta"]["stop_reason"] == "tool_use"

    side = httpx.post(f"{model.url}/v1/messages", json={"messages": [user]}).json()
    assert side["content"] == [{"type": "text", "text": SIDE_REPLY}]

    result = {"type": "tool_result", "tool_use_id": block["id"], "content": "ok"}
    messages = [
        user,
        {"role": "assistant", "content": [{**block, "input": ARGS}]},
        {"role": "user", "content": [result]},
    ]
    second = events(
        httpx.post(
            f"{model.url}/v1/messages",
            json={"stream": True, "tools": tools, "messages": messages},
        )
    )
    assert second[2]["delta"] == {"type": "text_delta", "text": "Done."}
    assert second[4]["delta"]["stop_reason"] == "end_turn"
    assert model.issued == [block["id"]] and model.answered() == model.issued
    assert len(model.main_requests("anthropic")) == 2 and len(model.requests) == 3


def test_openai_responses(model: FakeModel) -> None:
    tools = [{"type": "function", "name": "write"}]
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
    first = events(httpx.post(f"{model.url}/v1/responses", json={"tools": tools, "input": [user]}))
    assert [e["type"] for e in first] == [
        "response.created",
        "response.output_item.added",
        "response.output_item.done",
        "response.completed",
    ]
    item = first[2]["item"]
    assert (item["type"], item["name"], json.loads(item["arguments"])) == (
        "function_call",
        "write",
        ARGS,
    )
    output = {"type": "function_call_output", "call_id": item["call_id"], "output": "ok"}
    second = events(
        httpx.post(
            f"{model.url}/v1/responses", json={"tools": tools, "input": [user, item, output]}
        )
    )
    assert [e.get("delta") for e in second if e["type"] == "response.output_text.delta"] == [
        "Done."
    ]
    assert second[-2]["item"]["content"][0]["text"] == "Done."
    assert model.answered() == model.issued == [item["call_id"]]


def test_gemini_stream_generate_content(model: FakeModel) -> None:
    tools = [{"functionDeclarations": [{"name": "write"}]}]
    url = f"{model.url}/v1beta/models/gemini-x:streamGenerateContent?alt=sse"
    user = {"role": "user", "parts": [{"text": "go"}]}
    first = events(httpx.post(url, json={"tools": tools, "contents": [user]}))
    part = first[0]["candidates"][0]["content"]["parts"][0]
    assert part == {"functionCall": {"name": "write", "args": ARGS}}
    assert model.offered_tools() == ["write"]

    check = httpx.post(f"{model.url}/v1beta/models/gemini-x:generateContent", json={})
    text = check.json()["candidates"][0]["content"]["parts"][0]["text"]
    assert json.loads(text)["next_speaker"] == "user"  # what gemini's side checks parse

    answer = {"functionResponse": {"name": "write", "response": {"output": "ok"}}}
    contents = [user, {"role": "model", "parts": [part]}, {"role": "user", "parts": [answer]}]
    second = events(httpx.post(url, json={"tools": tools, "contents": contents}))
    assert second[0]["candidates"][0]["content"]["parts"] == [{"text": "Done."}]
    assert model.answered() == model.issued == ["write"]


def test_past_the_script_and_unknown_paths(model: FakeModel) -> None:
    model.script = []
    url = f"{model.url}/v1beta/models/g:streamGenerateContent?alt=sse"
    reply = events(httpx.post(url, json={"tools": [{}], "contents": []}))
    assert reply[0]["candidates"][0]["content"]["parts"] == [{"text": "(the script has ended)"}]
    assert httpx.get(f"{model.url}/elsewhere").status_code == 404
    assert model.requests[-1].api == "unknown"
