"""One stored message as a row: the ``messages`` table's columns, by name, in one order.

The writer makes these rows (its JSON encoded once, at submit), the hot writers store
them, the frames are built from them, and ``store.replay`` reads them back: one shape
everywhere, read by name. The JSON columns are text and ``created_at`` is the text
SQLAlchemy stores on SQLite, so a row goes to the database, and into a viewer's frame,
without decoding or formatting anything again.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec

__all__ = ["MESSAGE_COLUMNS", "MessageRow", "message_dict", "sqlite_stamp"]


class MessageRow(msgspec.Struct, frozen=True, gc=False):
    """A message's columns. A Struct rather than a NamedTuple: the writer builds one per
    update, by keyword (so two columns of one type cannot be swapped unseen), and a
    NamedTuple's keyword constructor is Python code (bench/results/notes.md). ``gc=False``:
    its fields are strings, numbers and None, never a cycle, so the collector need not
    track thousands of them a batch."""

    id: str
    session_id: str
    seq: int
    run_id: str | None
    step_number: int | None
    role: str
    type: str  # the content's type
    partial: bool
    dropped: bool
    content: str  # JSON text
    raw: str | None  # JSON text of the ACP frame; None when there is none or it was not read
    created_at: str  # UTC, ``YYYY-MM-DD HH:MM:SS.ffffff`` (``sqlite_stamp``)


MESSAGE_COLUMNS: tuple[str, ...] = MessageRow.__struct_fields__
"""The messages table's columns in the order of a ``MessageRow`` (and of
``msgspec.structs.astuple`` of one, the driver's parameters)."""


def message_dict(row: MessageRow, created_at: datetime) -> dict[str, Any]:
    """``row`` by column name (content and raw still JSON text), stamped ``created_at``."""
    values = msgspec.structs.asdict(row)
    values["created_at"] = created_at
    return values


def sqlite_stamp(value: datetime) -> str:
    """SQLAlchemy's SQLite text for a UTC datetime (its DATETIME storage format,
    ``YYYY-MM-DD HH:MM:SS.ffffff``); ``isoformat`` is C, a third of an f-string's cost."""
    if value.tzinfo is not UTC and value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.isoformat(" ", "microseconds")[:26]
