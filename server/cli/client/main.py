"""The client commands of ``agent-sessions``: ``sessions``, ``chat`` and ``export``.

They talk to a running server (``--url``, default http://127.0.0.1:8000) over its HTTP
API and WebSocket stream, sending ``--token`` (or ``AGENT_SESSIONS_TOKEN``, else
``API_TOKEN``, from the environment) as a bearer token.
Conversation goes to stdout; progress and errors go to stderr, in plain words. Exit
codes: 0 done, 1 the server refused or could not be reached, 130 interrupted.

``chat`` is line based, so it works on a terminal and with piped stdin alike: it reads a
prompt line, sends it, streams the agent's text as it arrives, shows tool calls and plans
in one line each, and asks about permission requests (the options are numbered; type the
number). It reads the next prompt once the turn ended; EOF or ``/quit`` leaves (the session
stays active: ``chat --resume ID`` continues it).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import anyio

from server.cli.client import usage
from server.cli.client.api import Api, CliError, find_repo
from server.cli.client.chat import Chat
from server.cli.client.keeping import add_keeping_commands, match_line
from server.cli.client.wire import JsonObject

__all__ = ["CliError", "add_commands"]

DEFAULT_URL = "http://127.0.0.1:8000"
STATUSES = ("active", "completed", "cancelled", "error")


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows)
    return "\n".join(line.rstrip() for line in lines)


def cmd_sessions(args: argparse.Namespace, api: Api) -> None:
    params: JsonObject = {"limit": args.limit}
    if args.status:
        params["status"] = args.status
    if args.repo:
        params["repoId"] = find_repo(api, args.repo, register=False)["id"]
    if args.search:
        params["q"] = args.search
    if args.sort:
        params["sort"] = args.sort
    if args.archived:
        params["archived"] = args.archived
    page = api.call("GET", "/api/sessions", params=params)
    sessions = page["sessions"]
    if not sessions:
        print("no sessions", file=sys.stderr)
        return
    rows = [["ID", "STATUS", "REPO", "AGENT", "SEQ", "UPDATED", "TITLE"]]
    for s in sessions:
        title = " ".join(filter(None, [s["title"], "(copy)" if s.get("forkedFrom") else None]))
        rows.append(
            [
                s["id"],
                s["status"],
                s["repo"]["name"],
                s["agentId"],
                str(s["lastSeq"]),
                (s["updatedAt"] or "")[:19].replace("T", " "),
                title,
            ]
        )
    matches = [match_line(s["match"]) if "match" in s else None for s in sessions]
    table = _table(rows).splitlines()
    print(table[0])
    for line, match in zip(table[1:], matches, strict=True):
        print(line)
        if match is not None:  # --search: why it matched
            print(match)
    if page["total"] > len(sessions):
        print(f"({len(sessions)} of {page['total']}; use --limit for more)", file=sys.stderr)


def cmd_export(args: argparse.Namespace, api: Api) -> None:
    if args.output:
        with open(args.output, "wb") as out:
            api.stream_to(f"/api/sessions/{args.session_id}/export", out)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        api.stream_to(f"/api/sessions/{args.session_id}/export", sys.stdout.buffer)


# -- chat --------------------------------------------------------------------------------


def _last_prompt_point(api: Api, session_id: str) -> int:
    """The seq just before the last user prompt: what ``--overwrite`` drops by default."""
    last = None
    after = 0
    while True:
        page = api.call(
            "GET",
            f"/api/sessions/{session_id}/messages",
            params={"after": after, "role": "user", "limit": 5000},
        )
        if page["messages"]:
            last = page["messages"][-1]["seq"]
        if page["nextAfter"] is None:
            break
        after = page["nextAfter"]
    if last is None:
        raise CliError("the session has no prompt to overwrite; pass --from-point SEQ")
    return int(last) - 1


def open_chat_session(args: argparse.Namespace, api: Api) -> JsonObject:
    """Create, fetch, fork or rewind the session ``chat`` talks to."""
    if args.repo:
        repo = find_repo(api, args.repo, register=True)
        body: JsonObject = {"repoId": repo["id"]}
        if args.agent:
            body["agentId"] = args.agent
        if args.title:
            body["title"] = args.title
        if args.worktree:
            body["isolation"] = "worktree"
        print(f"starting an agent on {repo['name']} ...", file=sys.stderr)
        session: JsonObject = api.call("POST", "/api/sessions", json=body)
        branch = session.get("workspace", {}).get("branch")
        where = f" in its own worktree on branch {branch}" if branch else ""
        print(f"created session {session['id']}{where}", file=sys.stderr)
        return session
    if args.copy:
        body = {} if args.to_point is None else {"uptoSeq": args.to_point}
        if args.title:
            body["title"] = args.title
        point = "the end" if args.to_point is None else f"seq {args.to_point}"
        print(f"copying session {args.copy} up to {point} ...", file=sys.stderr)
        session = api.call("POST", f"/api/sessions/{args.copy}/fork", json=body)
        print(
            f"created session {session['id']} (a copy; the agent gets the copied conversation "
            "with your first prompt)",
            file=sys.stderr,
        )
        return session
    if args.overwrite:
        to_seq = (
            args.from_point
            if args.from_point is not None
            else _last_prompt_point(api, args.overwrite)
        )
        session = api.call("POST", f"/api/sessions/{args.overwrite}/rewind", json={"toSeq": to_seq})
        print(
            f"rewound session {session['id']} to seq {to_seq}; later messages are kept for "
            f"audit only",
            file=sys.stderr,
        )
        return session
    session = api.call("GET", f"/api/sessions/{args.resume}")
    session.pop("messages", None)
    return session


def _check_chat_options(args: argparse.Namespace) -> None:
    pairs = [
        ("--to-point", args.to_point, args.copy, "--copy"),
        ("--from-point", args.from_point, args.overwrite, "--overwrite"),
        ("--agent", args.agent, args.repo, "--repo"),
        ("--title", args.title, args.repo or args.copy, "--repo or --copy"),
        ("--worktree", args.worktree or None, args.repo, "--repo"),
    ]
    for option, value, needed, which in pairs:
        if value is not None and not needed:
            raise CliError(f"{option} goes with {which}")


def cmd_chat(args: argparse.Namespace, api: Api) -> None:
    _check_chat_options(args)
    session = open_chat_session(args, api)
    if session["status"] != "active":
        raise CliError(
            f"session {session['id']} is {session['status']}; it takes no prompts. "
            f"Continue from a copy: agent-sessions chat --copy {session['id']}"
        )
    chat = Chat(api, session, sys.stdin, sys.stdout)
    anyio.run(chat.run)
    print(
        f"left session {session['id']}; it stays active. Continue with: "
        f"agent-sessions chat --resume {session['id']}",
        file=sys.stderr,
    )


def _run(command: Any) -> Any:
    def run(args: argparse.Namespace) -> None:
        try:
            with Api(args.url, client_token(args)) as api:
                command(args, api)
        except CliError as exc:
            print(f"agent-sessions: {exc}", file=sys.stderr)
            raise SystemExit(1) from None
        except KeyboardInterrupt:
            print("\nagent-sessions: interrupted", file=sys.stderr)
            raise SystemExit(130) from None

    return run


def client_token(args: argparse.Namespace) -> str | None:
    """--token, else AGENT_SESSIONS_TOKEN, else API_TOKEN (the server's own, on its host)."""
    given = getattr(args, "token", None)
    return given or os.environ.get("AGENT_SESSIONS_TOKEN") or os.environ.get("API_TOKEN") or None


def _status_list(value: str) -> str:
    bad = [v for v in value.split(",") if v.strip() not in STATUSES]
    if bad:
        raise argparse.ArgumentTypeError(f"status must be among {', '.join(STATUSES)}")
    return value


def add_commands(sub: Any) -> None:
    """Register ``sessions``, ``chat`` and ``export`` on the main parser's subparsers."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--url",
        default=DEFAULT_URL,
        help=f"the server (default {DEFAULT_URL})",
    )
    common.add_argument(
        "--token",
        default=None,
        help="your token (as_...); default: AGENT_SESSIONS_TOKEN, else API_TOKEN, from the "
        "environment (an option shows in the process list: prefer the variable)",
    )

    p = sub.add_parser("sessions", parents=[common], help="list sessions")
    p.add_argument(
        "--status", type=_status_list, help="comma-separated: active,completed,cancelled,error"
    )
    p.add_argument("--repo", help="repository id, name or path")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--search", metavar="WORDS", help="full-text search, best match first")
    p.add_argument("--sort", choices=("created", "activity"), help="default: created")
    p.add_argument(
        "--archived", choices=("false", "true", "all"), help="archived sessions (default: false)"
    )
    p.set_defaults(func=_run(cmd_sessions))
    add_keeping_commands(sub, common, _run)

    p = sub.add_parser("chat", parents=[common], help="chat with an agent in a terminal")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--repo",
        help="start a new session on this repository (path, name or id; registered if needed)",
    )
    which.add_argument("--resume", metavar="ID", help="continue a session")
    which.add_argument("--copy", metavar="ID", help="continue a copy (fork) of a session")
    which.add_argument("--overwrite", metavar="ID", help="rewind a session, then continue it")
    p.add_argument(
        "--to-point", type=int, metavar="SEQ", help="with --copy: copy the messages up to SEQ"
    )
    p.add_argument(
        "--from-point",
        type=int,
        metavar="SEQ",
        help="with --overwrite: keep the messages up "
        "to SEQ and continue from there (default: drop the last prompt and its answer)",
    )
    p.add_argument(
        "--agent", help="with --repo: the agent id (default: the server's default agent)"
    )
    p.add_argument("--title", help="with --repo or --copy: the new session's title")
    p.add_argument(
        "--worktree",
        action="store_true",
        help="with --repo: work in an isolated git worktree on a new branch agent/<hex>",
    )
    p.set_defaults(func=_run(cmd_chat))

    p = sub.add_parser("export", parents=[common], help="write a session as NDJSON")
    p.add_argument("session_id", metavar="ID")
    p.add_argument("-o", "--output", help="a file (default: stdout)")
    p.set_defaults(func=_run(cmd_export))

    usage.add_command(sub, common, _run, _table)
