"""The writer's clock: a message's timestamp as a datetime and as the text stored."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["now_and_stamp"]

_base = datetime.fromtimestamp(0, UTC)  # the whole second _prefix is for (event loop only)
_prefix = ""


def now_and_stamp() -> tuple[datetime, str]:
    """The current UTC time and SQLAlchemy's SQLite text for it
    (``YYYY-MM-DD HH:MM:SS.ffffff``, as ``store.message_row.sqlite_stamp`` makes it). The
    text up to the seconds is made once per second: a flood stamps thousands of
    submits in one, and ``isoformat`` was most of a submit's clock cost."""
    global _base, _prefix
    now = datetime.now(UTC)
    since = now - _base
    if since.seconds or since.days:  # another second (or the clock stepped back)
        _base = now.replace(microsecond=0)
        _prefix = _base.isoformat(" ")[:19]
    return now, f"{_prefix}.{now.microsecond:06d}"
