"""Migration 0004 gives runs that ended before it their roll-ups from the JSON they kept
(and leaves running runs and malformed values empty); its downgrade removes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from sqlalchemy import inspect, text

from store import downgrade, open_database, upgrade
from tests.conftest import test_database_url

REPO = "00000000-0000-4000-8000-000000000001"
SESSION = "00000000-0000-4000-8000-000000000002"


async def _check(url: str) -> list[Any]:
    db = open_database(url)
    try:
        await upgrade(db, "0003_workspaces")
        async with db.writer_engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO repos VALUES (:r, 'r', '/r', false, '2026-03-01 00:00:00');"
                    if db.dialect != "sqlite"
                    else "INSERT INTO repos VALUES (:r, 'r', '/r', 0, '2026-03-01 00:00:00')"
                ),
                {"r": REPO},
            )
            await conn.execute(
                text(
                    "INSERT INTO sessions (id, repo_id, agent_id, status, created_at, "
                    "updated_at, last_activity_at, last_seq, needs_context, metadata) VALUES "
                    "(:s, :r, 'a', 'completed', '2026-03-01 00:00:00', '2026-03-01 00:00:00', "
                    "'2026-03-01 00:00:00', 0, false, '{}')"
                ),
                {"s": SESSION, "r": REPO},
            )
            runs = [
                (
                    "r1",
                    "completed",
                    '{"inputTokens": 7, "outputTokens": 3, "cachedReadTokens": 2}',
                    '{"amount": 0.25, "currency": "USD"}',
                ),
                ("r2", "failed", '{"inputTokens": "many"}', '{"amount": "lots"}'),
                ("r3", "running", '{"inputTokens": 9}', None),
            ]
            for n, (_name, status, usage, cost) in enumerate(runs):
                ident = f"00000000-0000-4000-8000-00000000010{n}"
                await conn.execute(
                    text(
                        "INSERT INTO runs (id, session_id, repo_id, agent_id, status, "
                        "step_count, max_steps, usage, cost, created_at) VALUES "
                        "(:id, :s, :r, 'a', :status, 0, 50, :usage, :cost, "
                        "'2026-03-01 00:00:00')"
                    ),
                    {
                        "id": ident,
                        "s": SESSION,
                        "r": REPO,
                        "status": status,
                        "usage": usage,
                        "cost": cost,
                    },
                )
                for step, tool_status in enumerate(("completed", "error")[: 2 - n]):
                    await conn.execute(
                        text(
                            "INSERT INTO tool_calls (id, run_id, session_id, tool_call_id, "
                            "status, step_number, created_at) VALUES (:id, :run, :s, :call, "
                            ":st, :step, '2026-03-01 00:00:00')"
                        ),
                        {
                            "id": f"00000000-0000-4000-8000-0000000002{n}{step}",
                            "run": ident,
                            "s": SESSION,
                            "call": f"c{step}",
                            "st": tool_status,
                            "step": step,
                        },
                    )
        await upgrade(db)
        async with db.writer_engine.connect() as conn:
            rows = (
                await conn.execute(
                    text(
                        "SELECT input_tokens, output_tokens, cached_tokens, cost_amount, "
                        "cost_currency, tool_call_count, tool_failure_count FROM runs ORDER BY id"
                    )
                )
            ).all()
        await downgrade(db, "0003_workspaces")
        async with db.writer_engine.connect() as conn:
            columns = await conn.run_sync(
                lambda sync: [c["name"] for c in inspect(sync).get_columns("runs")]
            )
        return [[tuple(r) for r in rows], columns]
    finally:
        await db.close()


def test_backfill_and_downgrade(tmp_path: Path) -> None:
    rows, columns = anyio.run(_check, test_database_url(tmp_path))
    assert rows == [
        (7, 3, 2, 0.25, "USD", 2, 1),
        (None, None, None, None, None, 1, 0),
        (None, None, None, None, None, None, None),  # still running: left to its end
    ]
    assert "input_tokens" not in columns
    assert "usage" in columns
