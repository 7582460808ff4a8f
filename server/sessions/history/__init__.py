"""A session's history as an event log: fork and rewind (``log``, over the transcript of
``live.transcript``), and the NDJSON archive for export and import (``archive``)."""

__all__ = ["archive", "log"]
