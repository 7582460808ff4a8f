"""Token and sign-in secrets: random, prefixed ``as_``, kept only as their SHA-256."""

from __future__ import annotations

import hashlib
import hmac
import secrets

__all__ = ["PREFIX", "Secret", "hash_secret", "new_secret", "same_hash"]

PREFIX = "as_"
SECRET_BYTES = 32


class Secret(str):
    """A secret as a ``str`` whose ``repr`` never shows it (a log of a data structure,
    a traceback's locals, an assertion message)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Secret('as_***')"


def new_secret() -> Secret:
    """``as_`` and 32 random bytes in URL-safe base64 (43 characters)."""
    return Secret(PREFIX + secrets.token_urlsafe(SECRET_BYTES))


def hash_secret(value: str | bytes) -> str:
    raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
    return hashlib.sha256(raw).hexdigest()


def same_hash(a: str, b: str) -> bool:
    """Constant-time equality of two hashes (the row was found by its hash through an
    index; this keeps the final comparison free of early exits all the same)."""
    return hmac.compare_digest(a.encode(), b.encode())
