"""``agent-sessions archive`` and ``purge``, and how ``sessions --search`` shows why a
session matched (API.md, Finding and keeping sessions)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from server.cli.client.api import Api

__all__ = ["add_keeping_commands", "match_line"]

# the snippet's highlight marks (store.search), shown as brackets in a terminal
_MARKS = str.maketrans({"\ue000": "[", "\ue001": "]"})


def match_line(match: dict[str, Any]) -> str:
    where = f"#{match['seq']}" if match.get("seq") is not None else "title"
    snippet = " ".join(str(match.get("snippet", "")).translate(_MARKS).split())
    return f"    {where}: {snippet}"


def cmd_archive(args: argparse.Namespace, api: Api) -> None:
    body = {"archived": not args.undo}
    session = api.call("PATCH", f"/api/sessions/{args.session_id}", json=body)
    state = "archived" if session["archived"] else "back in the list"
    print(f"{session['id']} {state}", file=sys.stderr)


def cmd_purge(args: argparse.Namespace, api: Api) -> None:
    params = {"purge": "true", **({"keepBranch": "true"} if args.keep_branch else {})}
    api.call("DELETE", f"/api/sessions/{args.session_id}", params=params)
    print(f"{args.session_id} purged", file=sys.stderr)


def add_keeping_commands(sub: Any, common: argparse.ArgumentParser, run: Any) -> None:
    p = sub.add_parser(
        "archive", parents=[common], help="archive an ended session (hidden from lists)"
    )
    p.add_argument("session_id", metavar="ID")
    p.add_argument("--undo", action="store_true", help="bring it back into the list")
    p.set_defaults(func=run(cmd_archive))

    p = sub.add_parser(
        "purge",
        parents=[common],
        help="remove an ended session for good: messages, runs, checkpoints, worktree, branch",
    )
    p.add_argument("session_id", metavar="ID")
    p.add_argument("--keep-branch", action="store_true", help="keep its git branch")
    p.set_defaults(func=run(cmd_purge))
