"""Schemathesis extension hooks for tests/security/test_openapi.py (loaded through the
``hooks`` key of schemathesis.toml): session import takes an NDJSON archive, which
schemathesis sends as the plain text it generates."""

from __future__ import annotations

import schemathesis

schemathesis.serializer.alias("application/x-ndjson", "text/plain")
