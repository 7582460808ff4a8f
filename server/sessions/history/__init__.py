"""A session's history as an event log: the transcript (``transcript``), fork and rewind
(``log``), and the NDJSON archive for export and import (``archive``)."""

__all__ = ["archive", "log", "transcript"]
