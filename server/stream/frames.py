"""Every frame a viewer receives is built here: the Message shape of API.md and the
WebSocket envelopes around it (``message``, ``hello``, ``ack``, ``error``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson

from store import Message
from store.hot_writes import MessageRow

__all__ = ["ack_frame", "error_frame", "iso", "message_frame", "message_view", "stored_frame"]


def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    text = value.isoformat(timespec="milliseconds")  # UTC from the store; half strftime's cost
    return text[:-6] + "Z" if text.endswith("+00:00") else text + "Z"


def message_view(message: Message | dict[str, Any], *, raw: bool = False) -> dict[str, Any]:
    row = message if isinstance(message, dict) else _message_row(message)
    view = {
        "id": row["id"],
        "sessionId": row["session_id"],
        "runId": row["run_id"],
        "seq": row["seq"],
        "role": row["role"],
        "content": row["content"],
        "stepNumber": row["step_number"],
        "timestamp": iso(row["created_at"]),
    }
    if raw:
        view["raw"] = row["raw"]
        view["dropped"] = row["dropped"]
    return view


def _message_row(message: Message) -> dict[str, Any]:
    return {
        "id": message.id,
        "session_id": message.session_id,
        "run_id": message.run_id,
        "seq": message.seq,
        "role": message.role,
        "content": message.content,
        "step_number": message.step_number,
        "created_at": message.created_at,
        "raw": message.raw,
        "dropped": message.dropped,
    }


def message_frame(message: Message | dict[str, Any]) -> bytes:
    """The ``message`` frame for one stored message (UTF-8 JSON text), encoded once for
    every viewer."""
    return orjson.dumps({"type": "message", "message": message_view(message)})


def stored_frame(row: MessageRow) -> bytes:
    """The ``message`` frame of a row the writer just stored: its content is the JSON
    text stored, copied into the frame as it is (encoded once, for the database and for
    every viewer); its timestamp comes from the stored text (milliseconds, UTC)."""
    stamp = row[11]
    return orjson.dumps(
        {
            "type": "message",
            "message": {
                "id": row[0],
                "sessionId": row[1],
                "runId": row[3],
                "seq": row[2],
                "role": row[5],
                "content": orjson.Fragment(row[9]),
                "stepNumber": row[4],
                "timestamp": f"{stamp[:10]}T{stamp[11:23]}Z",
            },
        }
    )


def ack_frame(ref: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "ack", "ref": ref, **extra}


def error_frame(ref: Any, code: Any, message: Any) -> dict[str, Any]:
    return {"type": "error", "ref": ref, "error": {"code": code, "message": message}}
