"""The demo agent's flood lines, built from a template, are the bytes the wire's own
JSON encoding gives for the same message."""

from __future__ import annotations

import json

import pytest

from agent_bridge.demo_agent import flood

SESSION = "5f0c0d6e-1111-4222-8333-444455556666"
NOW = 1764030000.1234567


@pytest.mark.parametrize("kind", ["text", "tool"])
@pytest.mark.parametrize("count", [1, 40_000, 10**12])
def test_template_line_is_the_encoders_bytes(
    kind: str, count: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("agent_bridge.demo_agent.flood.time.time", lambda: NOW)
    lines = flood._Lines(SESSION, kind, count)
    for i in sorted({0, 7, count - 1}):
        update = flood.make_update(kind, i, count)
        update["_meta"] = {"demo": {"t": NOW, "i": i}}
        message = {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": SESSION, "update": update},
        }
        line = lines.line(i)
        # the text's t is the same reading 1 µs earlier (never later than _meta's once rounded)
        expected = json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n"
        assert line == expected.replace(f"t={NOW:.6f} ", f"t={NOW - 1e-6:.6f} ", 1)
        content = json.loads(line)["params"]["update"]["content"]
        stamp = flood.parse_stamp(
            content["text"] if kind == "text" else content[0]["content"]["text"]
        )
        assert stamp is not None and stamp[1] == i and stamp[0] <= NOW
