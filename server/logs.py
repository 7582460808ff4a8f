"""Logging: one line per event, text or JSON (``LOG_FORMAT``), with the request id and
whatever ids the record or its context carries (session_id, run_id, …).

- ``REQUEST_ID``: set per request by the RequestIdMiddleware.
- ``log_context(session_id=…, run_id=…)``: ids for every record logged inside the block,
  and inside every task started from it (tasks copy the context they start in). A
  record's own ``extra`` wins over the context.
- ``setup_logging(level, fmt)``: one stderr handler on the root logger, so the server's
  records, uvicorn's and any library's come out in the same format, one line each.
- ``redact(text)``: every line either formatter writes has its secrets masked: the value
  of a ``token=`` (or ``access_token=``) query parameter, as uvicorn's access log writes a
  WebSocket's URL, and a ``Bearer`` credential. API.md: no token reaches a log line.
"""

from __future__ import annotations

import contextvars
import logging
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

import orjson

__all__ = [
    "LOG_CONTEXT",
    "REQUEST_ID",
    "JsonFormatter",
    "TextFormatter",
    "log_context",
    "redact",
    "setup_logging",
]

REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
LOG_CONTEXT: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "log_context", default=MappingProxyType({})
)
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
    "color_message",  # uvicorn's copy of the message with terminal colours
}
# A token as a query parameter (any case, also URL-encoded in a logged URL: %3D is "=")
# up to the next separator, and a Bearer credential.
_SECRET = re.compile(
    r"(?i)((?:(?<![\w])|(?<=%3F)|(?<=%26))(?:access_)?token(?:=|%3D))[^&%\s\"'#;,)\]]+"
    r"|(\bbearer\s+)[^\s\"',;]+"
)


def redact(text: str) -> str:
    """``text`` with every token value replaced by ``[redacted]``."""
    if "oken" not in text and "earer" not in text and "OKEN" not in text:
        return text  # the common line: no regex
    return _SECRET.sub(lambda m: f"{m.group(1) or m.group(2)}[redacted]", text)


# Loggers that get no handler of their own: their records reach the root handler.
_PROPAGATED = ("agent_sessions", "uvicorn", "uvicorn.error", "uvicorn.access")


@contextmanager
def log_context(**ids: Any) -> Iterator[None]:
    """Add ``ids`` (``None`` removes one) to every record logged inside the block."""
    merged = {**LOG_CONTEXT.get(), **ids}
    token = LOG_CONTEXT.set({k: v for k, v in merged.items() if v is not None})
    try:
        yield
    finally:
        LOG_CONTEXT.reset(token)


def _extras(record: logging.LogRecord) -> dict[str, object]:
    extras = {**LOG_CONTEXT.get(), **{k: v for k, v in vars(record).items() if k not in _STANDARD}}
    request_id = REQUEST_ID.get()
    if request_id and extras.get("request_id") is None:
        extras["request_id"] = request_id
    return extras


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, then the ids."""

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
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return redact(orjson.dumps(entry, default=str).decode())


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: message k=v …``, on one line (newlines shown as ``\\n``)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        saved = record.exc_info, record.exc_text, record.stack_info
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        try:
            line = super().format(record)
        finally:
            record.exc_info, record.exc_text, record.stack_info = saved
        parts = [line, *(f"{k}={v}" for k, v in _extras(record).items())]
        if record.exc_info:
            parts.append(f"exception={self.formatException(record.exc_info)!r}")
        if record.stack_info:
            parts.append(f"stack={self.formatStack(record.stack_info)!r}")
        return redact(" ".join(parts).replace("\r", "\\r").replace("\n", "\\n"))


def setup_logging(level: str, fmt: str) -> None:
    """Everything to stderr through one handler: ``fmt`` ``json`` or ``text``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in _PROPAGATED:
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
        logger.setLevel(level.upper())
