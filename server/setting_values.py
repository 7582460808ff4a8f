"""Kinds of setting values: numbers, flags, choices, texts, commands and files, origins,
database URLs, host names and patterns, sizes in bytes, optional counts and cores. Each
parser raises ``ValueError`` with a short reason; ``server.settings`` names the variable."""

from __future__ import annotations

import ipaddress
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

__all__ = [
    "async_database_url",
    "choice",
    "command",
    "cores",
    "flag",
    "header_name",
    "host_names",
    "host_patterns",
    "limit",
    "number",
    "optional_text",
    "optional_whole",
    "origins",
    "readable_file",
    "size",
    "text",
    "whole",
]


def whole(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """A whole number in [``minimum``, ``maximum``]."""

    def parse(raw: str) -> int:
        return _whole(raw, minimum, maximum)

    return parse


def optional_whole(minimum: int) -> Callable[[str], int | None]:
    """A whole number of at least ``minimum``, or empty for none."""

    def parse(raw: str) -> int | None:
        return _whole(raw, minimum) if raw.strip() else None

    return parse


def number(minimum: float) -> Callable[[str], float]:
    """A finite number of at least ``minimum``."""

    def parse(raw: str) -> float:
        try:
            value = float(raw.strip())
        except ValueError:
            raise ValueError("must be a number") from None
        if not minimum <= value < float("inf"):
            raise ValueError(f"must be a number of at least {minimum}")
        return value

    return parse


def flag(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("must be true or false")


def choice(*choices: str) -> Callable[[str], str]:
    """One of ``choices`` (any case)."""

    def parse(raw: str) -> str:
        value = raw.strip().lower()
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return value

    return parse


def text(raw: str) -> str:
    return raw.strip()


def optional_text(raw: str) -> str | None:
    return raw.strip() or None


def header_name(raw: str) -> str | None:
    name = raw.strip().lower()
    if name and not re.fullmatch(r"[a-z0-9-]+", name):
        raise ValueError("must be a header name such as X-Forwarded-User")
    return name or None


def command(raw: str) -> str:
    """A command line (at least a program)."""
    if not shlex.split(raw):
        raise ValueError("must not be empty")
    return raw.strip()


def readable_file(raw: str) -> Path | None:
    """A file that exists, or empty for none."""
    if not raw.strip():
        return None
    path = Path(raw.strip())
    if not path.is_file():
        raise ValueError("names no readable file")
    return path


def origins(raw: str) -> tuple[str, ...]:
    """Origins as browsers send them: scheme://host[:port], nothing after it."""
    origins = tuple(o.strip().rstrip("/") for o in raw.split(",") if o.strip())
    for origin in origins:
        try:
            parts = urlsplit(origin)
            parts.port  # noqa: B018 - raises ValueError for a bad port
        except ValueError:
            parts = None
        if (
            parts is None
            or parts.scheme not in ("http", "https")
            or not parts.hostname
            or parts.path
            or parts.query
            or parts.fragment
            or parts.username is not None
        ):
            raise ValueError(f"{origin!r} is not an origin like https://example.com")
    return origins


def async_database_url(raw: str) -> str:
    """A SQLAlchemy URL with an async driver (the server only speaks asyncio)."""
    value = raw.strip()
    try:
        dialect = make_url(value).get_dialect()
    except (ArgumentError, NoSuchModuleError, ValueError):
        raise ValueError(
            "not a SQLAlchemy URL with a known driver, like sqlite+aiosqlite:///./data/agent-sessions.db"
        ) from None
    if not getattr(dialect, "is_async", False):
        raise ValueError("needs an async driver: sqlite+aiosqlite:// or postgresql+asyncpg://")
    return value


def host_names(raw: str) -> tuple[str, ...]:
    """Comma-separated host names or addresses (no port; ``[::1]`` or ``::1``), or ``*``."""
    hosts = []
    for item in raw.split(","):
        name = item.strip().lower()
        if not name:
            continue
        if name != "*" and (
            "/" in name or "@" in name or " " in name or (":" in name and not _is_ipv6(name))
        ):
            raise ValueError(f"{item.strip()!r} is not a host name or address (no port, no scheme)")
        hosts.append(name.strip("[]"))
    return tuple(hosts)


def _is_ipv6(name: str) -> bool:
    try:
        return ipaddress.ip_address(name.strip("[]")).version == 6
    except ValueError:
        return False


def size(raw: str) -> int | None:
    """A size in bytes, with an optional K, M, G or T suffix (powers of 1024); empty or
    ``max`` for no limit."""
    value = raw.strip().upper().removesuffix("B")
    if value in ("", "MAX"):
        return None
    scale = 1
    if value and value[-1] in "KMGT":
        scale = 1024 ** ("KMGT".index(value[-1]) + 1)
        value = value[:-1]
    try:
        amount = float(value)
    except ValueError:
        raise ValueError("must be a size like 4G, 512M or 1073741824") from None
    if not 1 <= amount * scale < 2**63:
        raise ValueError("must be a size like 4G, 512M or 1073741824")
    return int(amount * scale)


def limit(minimum: int) -> Callable[[str], int | None]:
    """A whole number of at least ``minimum``; empty or ``max`` for no limit."""

    def parse(raw: str) -> int | None:
        return None if raw.strip().lower() in ("", "max") else _whole(raw, minimum)

    return parse


def host_patterns(raw: str) -> tuple[str, ...]:
    """Comma-separated host names, each maybe ``*.`` + a domain (no port, no scheme)."""
    patterns = []
    for item in raw.split(","):
        name = item.strip().lower().rstrip(".")
        if not name:
            continue
        bare = name.removeprefix("*.")
        if not bare or "*" in bare or any(c in bare for c in "/@: "):
            raise ValueError(f"{item.strip()!r} is not a host name or *.domain pattern")
        patterns.append(name)
    return tuple(patterns)


def _whole(raw: str, minimum: int, maximum: int | None = None) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValueError("must be a whole number") from None
    if value < minimum:
        raise ValueError(f"must be at least {minimum}")
    if maximum is not None and value > maximum:
        raise ValueError(f"must be at most {maximum}")
    return value


def cores(raw: str) -> float | None:
    """CPU cores (1.5: one and a half), empty or ``max`` for no limit."""
    if raw.strip().lower() in ("", "max"):
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        raise ValueError("must be a number of cores, like 1.5") from None
    if not 0.01 <= value < 1e6:
        raise ValueError("must be a number of cores of at least 0.01")
    return value
