"""Every frame a viewer receives is built here: the Message shape of API.md and the
WebSocket envelopes around it (``message``, ``hello``, ``ack``, ``error``)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import orjson

from store import Message
from store.message_row import MessageRow

__all__ = [
    "ack_frame",
    "error_frame",
    "iso",
    "message_view",
    "row_view",
    "stored_frame",
    "stored_frames",
]


def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    text = value.isoformat(timespec="milliseconds")  # UTC from the store; half strftime's cost
    return text[:-6] + "Z" if text.endswith("+00:00") else text + "Z"


def message_view(message: Message | dict[str, Any], *, raw: bool = False) -> dict[str, Any]:
    row = message if isinstance(message, dict) else _message_row(message)
    return _view(
        row["id"],
        row["session_id"],
        row["run_id"],
        row["seq"],
        row["role"],
        row["content"],
        row["step_number"],
        iso(row["created_at"]),
        (row["raw"], row["dropped"]) if raw else None,
    )


def row_view(row: MessageRow, *, raw: bool = False) -> dict[str, Any]:
    """``message_view`` of a row read as text (``store.replay.view_rows``, with ``raw``
    when it read the raw column): the JSON goes in as the text stored (``orjson``
    writes it as it is), never decoded; the same JSON value as ``message_view``."""
    return _view(
        row.id,
        row.session_id,
        row.run_id,
        row.seq,
        row.role,
        orjson.Fragment(row.content),
        row.step_number,
        _stamp_iso(row.created_at),
        (None if row.raw is None else orjson.Fragment(row.raw), row.dropped) if raw else None,
    )


def _view(
    message_id: str,
    session_id: str,
    run_id: str | None,
    seq: int,
    role: str,
    content: Any,
    step_number: int | None,
    timestamp: str | None,
    raw_dropped: tuple[Any, bool] | None,
) -> dict[str, Any]:
    """API.md's Message, in its field order; ``raw`` and ``dropped`` when asked for."""
    view = {
        "id": message_id,
        "sessionId": session_id,
        "runId": run_id,
        "seq": seq,
        "role": role,
        "content": content,
        "stepNumber": step_number,
        "timestamp": timestamp,
    }
    if raw_dropped is not None:
        view["raw"], view["dropped"] = raw_dropped
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


def stored_frame(row: MessageRow) -> bytes:
    """The ``message`` frame of a stored row: one the writer just stored (live) or one
    read back (``store.replay``). Its content is the JSON text stored, copied into the
    frame as it is, never decoded (encoded once, for the database and every viewer);
    its timestamp comes from the stored text (milliseconds, UTC). A row read back gives
    the bytes of its live frame when the database kept the writer's JSON text (SQLite);
    PostgreSQL's ``jsonb`` gives the same JSON value in its own text.

    The bytes orjson makes of the frame's object, built as text: a flood keeps a whole
    batch of frames alive until sent, and an ``orjson.dumps`` output buffer is fresh
    memory per frame, dearer than the text and its ``encode``. Ids, session/run ids and
    the role go between quotes when they are letters, digits and dashes; the timestamp
    is our own ISO text; any other field (a quote in an id, a bool step) takes orjson's
    path."""
    message_id, session_id, run_id, seq, role = (
        row.id,
        row.session_id,
        row.run_id,
        row.seq,
        row.role,
    )
    step_number, timestamp = row.step_number, _stamp_iso(row.created_at)
    if (
        type(seq) is not int
        or (step_number is not None and type(step_number) is not int)
        or not _plain(message_id)
        or not _known_plain(session_id)
        or (run_id is not None and not _known_plain(run_id))
        or not _known_plain(role)
    ):
        return _frame_orjson(row, timestamp)
    run_text = "null" if run_id is None else f'"{run_id}"'
    step_text = "null" if step_number is None else step_number
    time_text = "null" if timestamp is None else f'"{timestamp}"'
    return (
        f'{{"type":"message","message":{{"id":"{message_id}","sessionId":"{session_id}",'
        f'"runId":{run_text},"seq":{seq},"role":"{role}","content":{row.content},'
        f'"stepNumber":{step_text},"timestamp":{time_text}}}}}'
    ).encode()


def _plain(text: object) -> bool:
    """A string JSON writes between quotes as it is: letters, digits and dashes (ids,
    roles)."""
    return type(text) is str and text.replace("-", "").isalnum()


_PLAIN: set[str] = set()  # strings seen plain: sessions', runs' ids and roles repeat


def _known_plain(text: object) -> bool:
    if text in _PLAIN:
        return True
    if not _plain(text):
        return False
    if len(_PLAIN) >= 4096:
        _PLAIN.clear()
    _PLAIN.add(text)  # type: ignore[arg-type]  # _plain checked it is a str
    return True


def _frame_orjson(row: MessageRow, timestamp: str | None) -> bytes:
    return orjson.dumps(
        {
            "type": "message",
            "message": {
                "id": row.id,
                "sessionId": row.session_id,
                "runId": row.run_id,
                "seq": row.seq,
                "role": row.role,
                "content": orjson.Fragment(row.content),
                "stepNumber": row.step_number,
                "timestamp": timestamp,
            },
        }
    )


def _stamp_iso(stamp: str) -> str | None:
    """API.md's timestamp (milliseconds, UTC) of SQLite's stored DATETIME text."""
    if len(stamp) == 26 and stamp[10] == " ":  # YYYY-MM-DD HH:MM:SS.ffffff, as stored
        return f"{stamp[:10]}T{stamp[11:23]}Z"
    return iso(datetime.fromisoformat(stamp).replace(tzinfo=UTC))  # e.g. no fraction


def stored_frames(rows: Iterable[MessageRow]) -> dict[str, list[tuple[int, bytes]]]:
    """``stored_frame`` of each row (the same bytes), per session, in order. The rows of
    one submit share their session, run, role, step and timestamp: the frame's text
    around id, seq and content is checked and made once for a run of such rows, and
    each frame is one f-string."""
    frames: dict[str, list[tuple[int, bytes]]] = {}
    key: tuple[Any, ...] | None = None
    shared: tuple[str, str, str] | None = None
    out: list[tuple[int, bytes]] = []
    for row in rows:
        session_id, run_id, step, role, stamp = (
            row.session_id,
            row.run_id,
            row.step_number,
            row.role,
            row.created_at,
        )
        row_key = (session_id, run_id, role, step, type(step), stamp)  # True == 1: the type too
        if row_key != key:
            key = row_key
            shared = _shared_text(session_id, run_id, role, step, stamp)
            out = frames.setdefault(session_id, [])
        message_id, seq = row.id, row.seq
        if shared is None or type(seq) is not int or not _plain(message_id):
            out.append((seq, stored_frame(row)))
            continue
        after_id, after_seq, tail = shared
        text = f"{_HEAD}{message_id}{after_id}{seq}{after_seq}{row.content}{tail}"
        out.append((seq, text.encode()))
    return frames


_HEAD = '{"type":"message","message":{"id":"'


def _shared_text(
    session_id: str, run_id: str | None, role: str, step: int | None, stamp: str
) -> tuple[str, str, str] | None:
    """The text ``stored_frame`` writes after the id, after the seq and after the content, for
    rows of these columns; None when they take orjson's path."""
    if (
        (step is not None and type(step) is not int)
        or not _known_plain(session_id)
        or (run_id is not None and not _known_plain(run_id))
        or not _known_plain(role)
    ):
        return None
    run_text = "null" if run_id is None else f'"{run_id}"'
    step_text = "null" if step is None else step
    timestamp = _stamp_iso(stamp)
    time_text = "null" if timestamp is None else f'"{timestamp}"'
    return (
        f'","sessionId":"{session_id}","runId":{run_text},"seq":',
        f',"role":"{role}","content":',
        f',"stepNumber":{step_text},"timestamp":{time_text}}}}}',
    )


def ack_frame(ref: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "ack", "ref": ref, **extra}


def error_frame(ref: Any, code: Any, message: Any) -> dict[str, Any]:
    return {"type": "error", "ref": ref, "error": {"code": code, "message": message}}
