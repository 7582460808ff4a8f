"""The ``agent-sessions`` command line: ``serve``, ``seed-demo`` and the client commands."""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["main"]

YOUNG_GC_THRESHOLD = 50_000  # net allocations between young-generation GC passes (serve)

DEMO_README = """# Demo repository

A small git repository seeded by ./scripts/run so a new user can start a session at once.
Ask the demo agent anything; ask it to `write notes.txt hello` to see a permission request.
"""


def seed_demo(root: Path) -> Path:
    """Create ``<root>/demo`` as a small git repository, unless it exists."""
    demo = root / "demo"
    if (demo / ".git").exists():
        return demo
    demo.mkdir(parents=True, exist_ok=True)
    (demo / "README.md").write_text(DEMO_README)
    (demo / "hello.py").write_text('print("hello from the demo repository")\n')
    env = {
        "GIT_AUTHOR_NAME": "agent-sessions",
        "GIT_AUTHOR_EMAIL": "demo@localhost",
        "GIT_COMMITTER_NAME": "agent-sessions",
        "GIT_COMMITTER_EMAIL": "demo@localhost",
        "PATH": "/usr/bin:/bin",
    }
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "Initial demo commit"]):
        subprocess.run(["git", *args], cwd=demo, check=True, env=env)
    return demo


def _settings(**overrides: str) -> Any:
    """Settings from the environment (and .env), with command-line values validated
    exactly like their variables; a bad value is one line and exit code 2."""
    import os

    from server.settings import SettingsError, load_settings

    try:
        return load_settings({**os.environ, **overrides} if overrides else None)
    except SettingsError as exc:
        print(f"agent-sessions: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def serve(args: argparse.Namespace) -> None:
    # Everything imported from here on lives as long as the process: no cyclic GC passes
    # while it loads (they cost start-up CPU for nothing: ~20 ms of uvicorn's and
    # SQLAlchemy's imports alone), and it all goes to the permanent generation below, so
    # later passes never examine it again (less CPU per update on the hot path). No
    # collect before the freeze (it would cost as much again): the imports' own cyclic
    # garbage is a few objects, kept once.
    gc.disable()
    import uvicorn

    overrides: dict[str, str] = {}
    if args.host:
        overrides["HOST"] = args.host
    if args.port is not None:
        overrides["PORT"] = str(args.port)
    settings = _settings(**overrides)  # before the heavy imports: a bad value fails fast

    from server import malloc

    malloc.tune()
    from server.app import create_app
    from server.logs import setup_logging

    setup_logging(settings.log_level, settings.log_format)
    from server.settings import SettingsError

    try:
        app = create_app(settings)
    except SettingsError as exc:
        print(f"agent-sessions: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        ws="websockets-sansio",
        ws_per_message_deflate=False,
        ws_max_size=settings.max_prompt_frame_bytes,  # other frames: MAX_WS_MESSAGE_BYTES
        # uvicorn's keepalive cut a slow viewer off with 1011 (its pong stuck behind the
        # frames queued before the ping); server.web.ws_liveness checks viewers instead
        # and lets them go with 4008
        ws_ping_interval=None,
        ws_ping_timeout=None,
        lifespan="on",
        access_log=False,
        log_config=None,  # setup_logging routes uvicorn's loggers through our handler
        timeout_graceful_shutdown=max(5, int(settings.agent_stop_grace * 3) + 5),
    )
    server = GracefulServer(config)
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    logging.getLogger("agent_sessions.cli").info(
        "open http://%s:%s/ in your browser", host, settings.port, extra={"event": "listening"}
    )
    gc.freeze()
    # A young-generation pass every 50 000 net allocations instead of 700: during a flood
    # each queued update keeps a few objects alive until its commit, so with the default
    # a pass ran every ~150 updates and examined the whole queue (and promoted it: gen-1
    # and full passes followed), for nothing: none of it is cyclic garbage, yet profiles
    # of a flood showed ``gc_collect_main`` as a large share of the event loop's time.
    # With this threshold almost no pass runs during a flood, and a pass examines at
    # most ~50 000 young objects.
    gc.set_threshold(YOUNG_GC_THRESHOLD, 10, 10)
    gc.enable()
    server.run()


class _GracefulMixin:
    """Close our WebSockets with 1001 and stop agents before uvicorn closes connections;
    exit 0 after a graceful shutdown on SIGTERM or Ctrl-C (uvicorn would re-raise the
    signal)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Any:
        with super().capture_signals():  # type: ignore[misc]
            yield
            self._captured_signals.clear()  # type: ignore[attr-defined]

    async def shutdown(self, sockets: Any = None) -> None:
        app = self.config.app  # type: ignore[attr-defined]
        state = getattr(app.state, "agent_sessions", None)
        if state is not None:
            await state.sessions.shutdown()
        await super().shutdown(sockets)  # type: ignore[misc]


def _graceful_server() -> type:
    import uvicorn

    return type("GracefulServer", (_GracefulMixin, uvicorn.Server), {})


def GracefulServer(config: Any) -> Any:  # noqa: N802 - a factory that reads like a class
    return _graceful_server()(config)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="agent-sessions", description="Host ACP coding agents for the web."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_serve = sub.add_parser("serve", help="start the server")
    p_serve.add_argument("--host", default=None)
    p_serve.add_argument("--port", type=int, default=None)
    p_serve.set_defaults(func=serve)
    p_seed = sub.add_parser("seed-demo", help="create workspace/demo, a small git repository")
    p_seed.set_defaults(
        func=lambda _a: print(
            f"demo repository: {seed_demo(_settings().workspace_root)}", file=sys.stderr
        )
    )
    from server.cli.users import add_command as add_users_command

    add_users_command(sub, _settings)
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in ("serve", "seed-demo", "users"):  # the client's own modules
        from server.cli.client import main as client_main

        client_main.add_commands(sub)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    args.func(args)
