"""Logging: one line per event, text or JSON (``LOG_FORMAT``), with the request id and
whatever ids the record carries (session_id, run_id, …)."""

from __future__ import annotations

import contextvars
import logging
import sys
from datetime import UTC, datetime

import orjson

__all__ = ["REQUEST_ID", "setup_logging"]

REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


def _extras(record: logging.LogRecord) -> dict[str, object]:
    extras = {k: v for k, v in vars(record).items() if k not in _STANDARD}
    request_id = REQUEST_ID.get()
    if request_id and "request_id" not in extras:
        extras["request_id"] = request_id
    return extras


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat().replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            **_extras(record),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extras = " ".join(f"{k}={v}" for k, v in _extras(record).items())
        return f"{line} {extras}" if extras else line


def setup_logging(level: str, fmt: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonFormatter() if fmt == "json" else TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    root = logging.getLogger("agent_sessions")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
