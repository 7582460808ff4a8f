"""The process entry point: settings from the environment, signals, exit code."""

from __future__ import annotations

import asyncio
import os
import signal

from .agent import serve
from .config import ConfigError, Settings
from .wire import log

__all__ = ["main"]


def main() -> int:
    """Run the demo agent on stdin/stdout; returns the process exit code."""
    try:
        settings = Settings.from_env(os.environ)
    except ConfigError as exc:
        log(str(exc))
        return 2
    if settings.fail_start:
        log("cannot start (fail-start)")
        return 2
    if settings.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        return asyncio.run(serve(settings))
    except KeyboardInterrupt:
        return 130
