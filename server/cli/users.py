"""``agent-sessions users add|token|list|remove``: managing users on the server's host,
straight in its database (``DATABASE_URL``), so the first admin can be made before anyone
can sign in. A token is printed once, on stdout alone (``users add alice > alice.token``);
everything else goes to stderr."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any

__all__ = ["add_command"]


def _expiry(value: str) -> datetime:
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError("an ISO 8601 time such as 2027-01-31T00:00:00Z") from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


async def _with_users(settings: Any, work: Callable[[Any], Awaitable[None]]) -> None:
    from server.cluster import CHANNEL
    from server.cluster.node import REVOKED
    from server.sessions.users import Revocations, Users
    from store import cluster as cluster_store
    from store import open_database, upgrade

    db = open_database(settings.database_url)
    try:
        await upgrade(db)
        revocations = Revocations()
        if db.dialect == "postgresql":  # the servers close what it revokes (LISTEN)

            async def publish(keys: list[str]) -> None:
                async with db.write() as session, session.begin():
                    payload = f"{REVOKED} cli {' '.join(keys)}"
                    await cluster_store.notify(session, CHANNEL, [payload])

            revocations.publish = publish
        await work(Users(db, settings, revocations))
    finally:
        await db.close()


def _run(load_settings: Callable[[], Any], args: argparse.Namespace) -> None:
    import anyio

    from server.sessions.errors import DomainError

    settings = load_settings()

    async def work(users: Any) -> None:
        if args.action == "add":
            user, secret = await users.add_user(args.name, args.role)
            print(f"added {user.name} ({user.role}); their token, shown only now:", file=sys.stderr)
            print(secret)
        elif args.action == "token":
            user = await users.user_by_name(args.name)
            token, secret = await users.make_token(user.id, args.token_name, args.expires)
            until = f", expires {token.expires_at.isoformat()}" if token.expires_at else ""
            print(f"a new token for {user.name}{until}; shown only now:", file=sys.stderr)
            print(secret)
        elif args.action == "list":
            rows = [["NAME", "ROLE", "ID", "CREATED"]]
            for user in await users.list_users():
                created = user.created_at.isoformat(timespec="seconds")
                rows.append([user.name, user.role, user.id, created])
            widths = [max(len(r[i]) for r in rows) for i in range(4)]
            for row in rows:
                print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        else:
            user = await users.user_by_name(args.name)
            await users.remove_user(user.id)
            print(f"removed {user.name}; their sessions stay", file=sys.stderr)

    try:
        anyio.run(_with_users, settings, work)
    except DomainError as exc:
        print(f"agent-sessions: {exc.message}", file=sys.stderr)
        raise SystemExit(1) from None


def add_command(sub: Any, load_settings: Callable[[], Any]) -> None:
    """``users`` and its actions; ``load_settings`` is the command line's (no import of
    ``server.cli`` from here: that would be a cycle)."""
    p = sub.add_parser("users", help="add, list and remove users; make tokens")
    actions = p.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="add a user and print their first token")
    add.add_argument("name")
    add.add_argument("--role", choices=("admin", "member", "viewer"), default="member")
    token = actions.add_parser("token", help="print a new token for a user")
    token.add_argument("name")
    token.add_argument("--name", dest="token_name", default=None, help="what the token is for")
    token.add_argument("--expires", type=_expiry, default=None, help="ISO 8601 time")
    actions.add_parser("list", help="list users")
    remove = actions.add_parser("remove", help="remove a user (their sessions stay)")
    remove.add_argument("name")
    p.set_defaults(func=partial(_run, load_settings))
