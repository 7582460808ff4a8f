"""The statistics roll-up (migration 0006): tables of sums per time slot that ``/api/stats``
reads instead of the runs, kept current by SQL triggers on ``runs`` and ``tool_calls``.

``stats_runs`` has one row per (grain, agent filter ``fa``, repo filter ``fr``, grouping
dimension ``kdim`` and its value ``kval``, slot, currency): ``grain`` is the slot's length
in seconds, ``slot`` its start (Unix seconds, a multiple of ``grain``), ``fa``/``fr`` the
run's agent/repository or ``''`` for "any". Every run is counted in the rows of
``SHAPES``: whole UTC days in every combination a query can ask for (grouped by
agent, repo, status or none, filtered by agent and/or repository or not), and 4 h / 1 h
slots ungrouped (for day buckets of zones that are not UTC), 15 min slots ungrouped too
(for zones with half- and quarter-hour offsets: unfiltered since migration 0006, in every
filter combination since 0008), and 1 h slots grouped but unfiltered (the edges of a range
grouped by agent, repo or status). Each row holds the run count, the count
per status, tool calls and failures, the sums of duration, tokens and cost, and a
histogram of durations (``h0``..: bins ``[BINS[i-1], BINS[i])`` ms, ``h0`` below 1 ms, the
last open) from which large ranges estimate median and p95 (store/stats_fast.py).

``stats_tools`` is the same for tool calls (by tool name; whole days and hours, filtered
by the run's agent and/or repository or not). Tool calls of a run that is deleted leave
it in the run's BEFORE DELETE trigger (the cascade deletes them once the run is gone).

This module is the schema of migrations 0006 and 0008 (``SHAPES_0006``, ``SHAPES``): changing
it needs a new migration (which keeps its own frozen list of shapes, as 0006 does).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    String,
    Table,
    Text,
)

__all__ = [
    "BINS",
    "HIST",
    "SHAPES",
    "SHAPES_0006",
    "STATUS_COLUMNS",
    "CHANGE_VIEWS",
    "backfill_sql",
    "change_trigger_sql",
    "drop_change_trigger_sql",
    "drop_trigger_sql",
    "fence",
    "run_table",
    "tool_table",
    "trigger_sql",
]

DAY, FOUR_HOURS, HOUR, QUARTER = 86400, 14400, 3600, 900
# Lower edges of the duration bins (ms): 2^(k/4) rounded up, 1 ms .. 2^25 ms (9.3 h).
BINS: tuple[int, ...] = tuple(sorted({math.ceil(2 ** (k / 4)) for k in range(101)}))
HIST = tuple(f"h{i}" for i in range(len(BINS) + 1))
STATUSES = ("running", "completed", "failed", "cancelled", "paused", "interrupted")
STATUS_COLUMNS = tuple(f"n_{s}" for s in STATUSES)
RUN_SUMS = ("runs", *STATUS_COLUMNS, "tool_calls", "tool_failures", "duration_total")
RUN_SUMS += ("input_tokens", "output_tokens", "cached_tokens", "cost_n")
RUN_KEY = ("grain", "fa", "fr", "kdim", "slot", "kval", "cur_null", "currency")
TOOL_KEY = ("grain", "fa", "fr", "slot", "name_null", "tool_name")

Shape = tuple[int, int, int, str]  # (grain, keeps the agent, keeps the repository, grouping)
SHAPES_0006: tuple[Shape, ...] = (
    *((DAY, a, r, k) for a in (0, 1) for r in (0, 1) for k in ("-", "status")),
    (DAY, 0, 0, "agent"),
    (DAY, 0, 1, "agent"),
    (DAY, 0, 0, "repo"),
    (DAY, 1, 0, "repo"),
    *((g, a, r, "-") for g in (FOUR_HOURS, HOUR) for a in (0, 1) for r in (0, 1)),
    (QUARTER, 0, 0, "-"),
    *((HOUR, 0, 0, k) for k in ("status", "agent", "repo")),
)
# Migration 0008: 15 min slots filtered by agent and/or repository too (a day of a zone with
# a half- or quarter-hour offset then reads no run, filtered or not).
SHAPES_0008_ADDED: tuple[Shape, ...] = (
    (QUARTER, 1, 0, "-"),
    (QUARTER, 0, 1, "-"),
    (QUARTER, 1, 1, "-"),
)
SHAPES: tuple[Shape, ...] = (*SHAPES_0006, *SHAPES_0008_ADDED)
TOOL_SHAPES: tuple[tuple[int, int, int], ...] = tuple(
    (g, a, r) for g in (DAY, HOUR) for a in (0, 1) for r in (0, 1)
)


def run_table(metadata: MetaData) -> Table:
    return Table(
        "stats_runs",
        metadata,
        Column("grain", Integer, nullable=False),
        Column("fa", String(255), nullable=False),
        Column("fr", String(36), nullable=False),
        Column("kdim", String(8), nullable=False),
        Column("slot", BigInteger, nullable=False),
        Column("kval", String(255), nullable=False),
        Column("cur_null", SmallInteger, nullable=False),
        Column("currency", String(16), nullable=False),
        *(Column(name, BigInteger, nullable=False) for name in RUN_SUMS),
        Column("cost_amount", Float, nullable=False),
        *(Column(name, Integer, nullable=False) for name in HIST),
        PrimaryKeyConstraint(*RUN_KEY, name="pk_stats_runs"),
        sqlite_with_rowid=False,
    )


def tool_table(metadata: MetaData) -> Table:
    return Table(
        "stats_tools",
        metadata,
        Column("grain", Integer, nullable=False),
        Column("fa", String(255), nullable=False),
        Column("fr", String(36), nullable=False),
        Column("slot", BigInteger, nullable=False),
        Column("name_null", SmallInteger, nullable=False),
        Column("tool_name", Text, nullable=False),
        Column("calls", BigInteger, nullable=False),
        Column("failures", BigInteger, nullable=False),
        *(Column(name, Integer, nullable=False) for name in HIST),
        PrimaryKeyConstraint(*TOOL_KEY, name="pk_stats_tools"),
        sqlite_with_rowid=False,
    )


# -- SQL -------------------------------------------------------------------------------------


def bin_sql(value: str) -> str:
    """The bin of ``value`` (ms), NULL for NULL: a balanced CASE (7 comparisons)."""
    return f"CASE WHEN {value} IS NULL THEN NULL ELSE {_bin_tree(value, 0, len(BINS))} END"


def _bin_tree(value: str, low: int, high: int) -> str:
    """bin(value) = the number of BINS[i] <= value, knowing it is in [low, high]."""
    if low == high:
        return str(low)
    middle = (low + high) // 2
    return (
        f"CASE WHEN {value} < {BINS[middle]} THEN {_bin_tree(value, low, middle)} "
        f"ELSE {_bin_tree(value, middle + 1, high)} END"
    )


def _epoch(dialect: str, column: str) -> str:
    if dialect == "sqlite":
        return f"CAST(strftime('%s', {column}) AS INTEGER)"
    return f"CAST(floor(extract(epoch FROM {column})) AS bigint)"


def _union(rows: list[str]) -> str:
    return " UNION ALL ".join(f"SELECT {row}" for row in rows)


def _run_source(dialect: str, r: str, sign: int | str) -> str:
    """One run as a row of signed contributions; ``r`` prefixes its columns: ``NEW.``,
    ``OLD.``, a table alias's, or one side of a change's (``NEW.o_``, ``NEW.n_``)."""
    return (
        f"{sign} AS sign, {_epoch(dialect, f'{r}created_at')} AS epoch, "
        f"{r}agent_id AS agent_id, {r}repo_id AS repo_id, {r}status AS status, "
        f"{r}cost_currency AS cost_currency, {r}tool_call_count AS tool_call_count, "
        f"{r}tool_failure_count AS tool_failure_count, {r}duration_ms AS duration_ms, "
        f"{r}input_tokens AS input_tokens, {r}output_tokens AS output_tokens, "
        f"{r}cached_tokens AS cached_tokens, {r}cost_amount AS cost_amount, "
        f"{bin_sql(f'{r}duration_ms')} AS bin"
    )


def _shapes_sql(shapes: tuple[Shape, ...]) -> str:
    return _union([f"{g} AS grain, {a} AS ka, {r} AS kr, '{k}' AS kdim" for g, a, r, k in shapes])


_TOOL_SHAPES_SQL = _union([f"{g} AS grain, {a} AS ka, {r} AS kr" for g, a, r in TOOL_SHAPES])


# Rows are written in key order: concurrent writers on PostgreSQL then lock the roll-up
# rows they share in one order (no deadlock between two single-statement writers), and
# SQLite fills its WITHOUT ROWID tree in order.
_ORDER = "1, 2, 3, 4, 5, 6, 7, 8"


def _hist(sign: str) -> str:
    return ", ".join(f"SUM(CASE WHEN d.bin = {i} THEN {sign} ELSE 0 END)" for i in range(len(HIST)))


def fence(dialect: str) -> str:
    """Appended to a subquery, keeps it one (neither database then pastes its expressions,
    e.g. the CASE of ``bin_sql``, into each of the outer query's ~100 that use them)."""
    return " LIMIT -1 OFFSET 0" if dialect == "sqlite" else " OFFSET 0"


def _run_rows(source: str, dialect: str, shapes: tuple[Shape, ...]) -> str:
    """SELECT of the roll-up rows (one per key) of the runs in ``source``."""
    statuses = ", ".join(
        f"SUM(CASE WHEN d.status = '{s}' THEN d.sign ELSE 0 END)" for s in STATUSES
    )
    kval = (
        "CASE g.kdim WHEN 'status' THEN d.status WHEN 'agent' THEN d.agent_id "
        "WHEN 'repo' THEN d.repo_id ELSE '' END"
    )
    key = (
        "g.grain, CASE WHEN g.ka = 1 THEN d.agent_id ELSE '' END, "
        "CASE WHEN g.kr = 1 THEN d.repo_id ELSE '' END, g.kdim, d.epoch - d.epoch % g.grain, "
        f"{kval}, CASE WHEN d.cost_currency IS NULL THEN 1 ELSE 0 END, "
        "COALESCE(d.cost_currency, '')"
    )
    return (
        f"SELECT {key}, SUM(d.sign), {statuses}, "
        "SUM(d.sign * COALESCE(d.tool_call_count, 0)), "
        "SUM(d.sign * COALESCE(d.tool_failure_count, 0)), "
        "SUM(d.sign * COALESCE(d.duration_ms, 0)), SUM(d.sign * COALESCE(d.input_tokens, 0)), "
        "SUM(d.sign * COALESCE(d.output_tokens, 0)), SUM(d.sign * COALESCE(d.cached_tokens, 0)),"
        " SUM(CASE WHEN d.cost_amount IS NULL THEN 0 ELSE d.sign END), "
        f"SUM(d.sign * COALESCE(d.cost_amount, 0)), {_hist('d.sign')} "
        f"FROM ({source}{fence(dialect)}) AS d, ({_shapes_sql(shapes)}) AS g WHERE 1 = 1 "
        f"GROUP BY {key} ORDER BY {_ORDER}"
    )


def _tool_source(dialect: str, t: str, r: str, sign: str) -> str:
    """One tool call as a row of signed contributions: ``t`` prefixes its columns, ``r``
    its run's (as ``_run_source``'s)."""
    return (
        f"{sign} AS sign, {_epoch(dialect, f'{t}created_at')} AS epoch, "
        f"{r}agent_id AS agent_id, {r}repo_id AS repo_id, "
        f"{t}tool_name AS tool_name, {t}status AS status, "
        f"{bin_sql(f'{t}duration_ms')} AS bin"
    )


def _tool_rows(source: str, dialect: str) -> str:
    key = (
        "g.grain, CASE WHEN g.ka = 1 THEN d.agent_id ELSE '' END, "
        "CASE WHEN g.kr = 1 THEN d.repo_id ELSE '' END, d.epoch - d.epoch % g.grain, "
        "CASE WHEN d.tool_name IS NULL THEN 1 ELSE 0 END, COALESCE(d.tool_name, '')"
    )
    return (
        f"SELECT {key}, SUM(d.sign), SUM(CASE WHEN d.status = 'error' THEN d.sign ELSE 0 END), "
        f"{_hist('d.sign')} FROM ({source}{fence(dialect)}) AS d, ({_TOOL_SHAPES_SQL}) AS g "
        f"WHERE 1 = 1 GROUP BY {key} ORDER BY {_ORDER[:-6]}"
    )


def _columns(table: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if table == "stats_runs":
        return RUN_KEY, (*RUN_SUMS, "cost_amount", *HIST)
    return TOOL_KEY, ("calls", "failures", *HIST)


def _upsert(table: str, select: str) -> str:
    key, values = _columns(table)
    updates = ", ".join(f"{c} = {table}.{c} + excluded.{c}" for c in values)
    return (
        f"INSERT INTO {table} ({', '.join((*key, *values))}) {select} "
        f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}"
    )


def backfill_sql(
    dialect: str, shapes: tuple[Shape, ...] = SHAPES, *, tools: bool = True
) -> list[str]:
    """Fill the (empty) roll-up tables from the rows already there: the rows of ``shapes``
    (and of the tool calls unless ``tools`` is false)."""
    runs = f"SELECT {_run_source(dialect, 'r.', 1)} FROM runs r"
    tool_source = (
        f"SELECT {_tool_source(dialect, 't.', 'r.', '1')} "
        "FROM tool_calls t JOIN runs r ON r.id = t.run_id"
    )
    out = [_upsert("stats_runs", _run_rows(runs, dialect, shapes))]
    return [*out, _upsert("stats_tools", _tool_rows(tool_source, dialect))] if tools else out


RUN_STAT_COLUMNS = (
    "agent_id",
    "repo_id",
    "status",
    "duration_ms",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "cost_amount",
    "cost_currency",
    "tool_call_count",
    "tool_failure_count",
)
"""The run columns the statistics read: the covering index ``ix_runs_stats`` holds them
after ``created_at``, the fast path reads the edges' runs by them, the triggers watch them."""
_RUN_WATCHED = ("created_at", *RUN_STAT_COLUMNS)
# A tool call's status counts only as error or not: pending -> in_progress -> completed
# fires nothing until the end (each firing costs the writer time on SQLite).
_TOOL_WATCHED = ("created_at", "run_id", "tool_name", "(status = 'error')", "duration_ms")


def _changed(columns: tuple[str, ...], distinct: str) -> str:
    def side(record: str, column: str) -> str:
        return (
            column.replace("(", f"({record}.") if column.startswith("(") else f"{record}.{column}"
        )

    return " OR ".join(f"{side('OLD', c)} {distinct} {side('NEW', c)}" for c in columns)


def _statements(dialect: str, shapes: tuple[Shape, ...]) -> dict[str, list[str]]:
    """The statements of each trigger, by the trigger's event."""

    def runs(*records: tuple[str, int]) -> str:
        return _upsert(
            "stats_runs",
            _run_rows(
                _union([_run_source(dialect, f"{r}.", s) for r, s in records]), dialect, shapes
            ),
        )

    def run_tools(run: str, sign: str) -> str:
        source = (
            f"SELECT {_tool_source(dialect, 't.', f'{run}.', sign)} FROM tool_calls t "
            f"WHERE t.run_id = {run}.id"
        )
        return _upsert("stats_tools", _tool_rows(source, dialect))

    def tools(*records: tuple[str, str]) -> str:
        parts = [
            f"SELECT {_tool_source(dialect, f'{rec}.', 'r.', sign)} "
            f"FROM runs r WHERE r.id = {rec}.run_id"
            for rec, sign in records
        ]
        return _upsert("stats_tools", _tool_rows(" UNION ALL ".join(parts), dialect))

    return {
        "run_insert": [runs(("NEW", 1))],
        "run_update": [runs(("OLD", -1), ("NEW", 1))],
        "run_delete": [runs(("OLD", -1)), run_tools("OLD", "-1")],
        # a run's agent or repository changes (not done today): its tool calls move with it
        "run_move": [run_tools("OLD", "-1"), run_tools("NEW", "1")],
        "tool_insert": [tools(("NEW", "1"))],
        "tool_update": [tools(("OLD", "-1"), ("NEW", "1"))],
        "tool_delete": [tools(("OLD", "-1"))],
    }


_EVENTS = {
    # name: (table, timing, event, condition)
    "run_insert": ("runs", "AFTER", "INSERT", None),
    "run_update": ("runs", "AFTER", "UPDATE", _RUN_WATCHED),
    "run_delete": ("runs", "BEFORE", "DELETE", None),
    "run_move": ("runs", "BEFORE", "UPDATE", ("agent_id", "repo_id")),
    "tool_insert": ("tool_calls", "AFTER", "INSERT", None),
    "tool_update": ("tool_calls", "AFTER", "UPDATE", _TOOL_WATCHED),
    "tool_delete": ("tool_calls", "AFTER", "DELETE", None),
}


def trigger_sql(dialect: str, shapes: tuple[Shape, ...] = SHAPES) -> list[str]:
    """CREATE statements of the triggers (and, on PostgreSQL, their functions).

    A tool call's agent and repository are its run's: ``tool_*`` statements read the run
    row, and count nothing when it is gone (a run's delete already took its tool calls out).
    """
    out: list[str] = []
    for name, body in _statements(dialect, shapes).items():
        table, timing, event, watched = _EVENTS[name]
        if dialect == "sqlite":
            out.append(_sqlite_trigger(name, body))
            continue
        result = "OLD" if event == "DELETE" else "NEW"
        statements = "".join(f"{s};\n" for s in body)
        out.append(
            f"CREATE FUNCTION stats_{name}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
            f"BEGIN\n{statements}RETURN {result};\nEND\n$$"
        )
        when = f" WHEN ({_changed(watched, 'IS DISTINCT FROM')})" if watched else ""
        out.append(
            f"CREATE TRIGGER stats_{name} {timing} {event} ON {table} FOR EACH ROW{when} "
            f"EXECUTE FUNCTION stats_{name}()"
        )
    return out


def _sqlite_trigger(name: str, body: list[str]) -> str:
    table, timing, event, watched = _EVENTS[name]
    when = f" WHEN {_changed(watched, 'IS NOT')}" if watched else ""
    statements = "".join(f"{s};\n" for s in body)
    return (
        f"CREATE TRIGGER stats_{name} {timing} {event} ON {table} FOR EACH ROW{when}\n"
        f"BEGIN\n{statements}END"
    )


# -- SQLite since 0014: the triggers hand each change to a view's INSTEAD OF trigger -------
# SQLite parses every trigger on a connection's first statement; the ten upserts above were
# 160 KB of SQL (~13 ms a connection). Each trigger now inserts its change (old side, new
# side or both, one row) into a view whose INSTEAD OF trigger holds the one upsert of its
# table (docs/usage.md). PostgreSQL plans its functions on first use: it keeps the above.

_TOOL_SIDE = ("sign", "created_at", "agent_id", "repo_id", "tool_name", "status", "duration_ms")
_SIDES = {"stats_run_changes": ("sign", *_RUN_WATCHED), "stats_tool_changes": _TOOL_SIDE}
CHANGE_VIEWS = tuple(_SIDES)


def _side(view: str, side: str) -> list[str]:
    return [f"{side}_{c}" for c in _SIDES[view]]


def _change(view: str, sides: list[tuple[str, list[str]]], source: str = "") -> str:
    """Hand one change to ``view``: ``sides`` are (``o`` or ``n``, its values in the
    side's column order), selected ``FROM source`` when given."""
    columns = [c for side, _ in sides for c in _side(view, side)]
    values = ", ".join(v for _, side_values in sides for v in side_values)
    select = f"SELECT {values} FROM {source}" if source else f"VALUES ({values})"
    return f"INSERT INTO {view} ({', '.join(columns)}) {select}"


def _run_values(record: str, sign: str) -> list[str]:
    return [sign, *(f"{record}.{c}" for c in _RUN_WATCHED)]


def _tool_values(call: str, run: str, sign: str) -> list[str]:
    """A tool call's side: its run's agent and repository, its own other columns."""
    return [sign, *(f"{run if c in ('agent_id', 'repo_id') else call}.{c}" for c in _TOOL_SIDE[1:])]


def _change_statements() -> dict[str, list[str]]:
    """The statements of each trigger, by the trigger's event (as ``_statements``)."""
    run, tool = CHANGE_VIEWS

    def run_tools(record: str, side: str, sign: str) -> str:
        source = f"tool_calls t WHERE t.run_id = {record}.id"
        return _change(tool, [(side, _tool_values("t", record, sign))], source)

    def tools(record: str, side: str, sign: str) -> str:
        source = f"runs r WHERE r.id = {record}.run_id"
        return _change(tool, [(side, _tool_values(record, "r", sign))], source)

    # a side whose run is gone counts nothing (its sign NULL)
    both = [
        ("o", _tool_values("OLD", "ro", "CASE WHEN ro.id IS NULL THEN NULL ELSE -1 END")),
        ("n", _tool_values("NEW", "rn", "CASE WHEN rn.id IS NULL THEN NULL ELSE 1 END")),
    ]
    joined = "(SELECT 1) AS one LEFT JOIN runs ro ON ro.id = OLD.run_id "
    joined += "LEFT JOIN runs rn ON rn.id = NEW.run_id"
    old_run, new_run = ("o", _run_values("OLD", "-1")), ("n", _run_values("NEW", "1"))
    return {
        "run_insert": [_change(run, [new_run])],
        "run_update": [_change(run, [old_run, new_run])],
        "run_delete": [_change(run, [old_run]), run_tools("OLD", "o", "-1")],
        "run_move": [run_tools("OLD", "o", "-1"), run_tools("NEW", "n", "1")],
        "tool_insert": [tools("NEW", "n", "1")],
        "tool_update": [_change(tool, both, joined)],
        "tool_delete": [tools("OLD", "o", "-1")],
    }


def change_trigger_sql(shapes: tuple[Shape, ...] = SHAPES) -> list[str]:
    """SQLite's CREATE statements (migration 0014): the two views, their INSTEAD OF
    triggers with the upserts, and the seven triggers that hand them the changes."""
    out: list[str] = []
    for view in CHANGE_VIEWS:
        columns = [*_side(view, "o"), *_side(view, "n")]
        nulls = ", ".join("NULL" for _ in columns)
        out.append(f"CREATE VIEW {view} ({', '.join(columns)}) AS SELECT {nulls} WHERE 0")

    def both_sides(source: Callable[[str], str]) -> str:  # a side without its sign: no row
        return _union([f"{source(f'NEW.{s}_')} WHERE NEW.{s}_sign IS NOT NULL" for s in "on"])

    runs = both_sides(lambda side: _run_source("sqlite", side, f"{side}sign"))
    tools = both_sides(lambda side: _tool_source("sqlite", side, side, f"{side}sign"))
    upserts = {
        "stats_run_changes": _upsert("stats_runs", _run_rows(runs, "sqlite", shapes)),
        "stats_tool_changes": _upsert("stats_tools", _tool_rows(tools, "sqlite")),
    }
    for view, upsert in upserts.items():
        out.append(
            f"CREATE TRIGGER {view}_apply INSTEAD OF INSERT ON {view} FOR EACH ROW\n"
            f"BEGIN\n{upsert};\nEND"
        )
    return out + [_sqlite_trigger(name, body) for name, body in _change_statements().items()]


def drop_change_trigger_sql() -> list[str]:
    """Undo ``change_trigger_sql`` (a view's drop takes its trigger)."""
    return [*drop_trigger_sql("sqlite"), *(f"DROP VIEW IF EXISTS {v}" for v in CHANGE_VIEWS)]


def drop_trigger_sql(dialect: str) -> list[str]:
    out = []
    for name, (table, *_) in _EVENTS.items():
        if dialect == "sqlite":
            out.append(f"DROP TRIGGER IF EXISTS stats_{name}")
        else:
            out.append(f"DROP TRIGGER IF EXISTS stats_{name} ON {table}")
            out.append(f"DROP FUNCTION IF EXISTS stats_{name}()")
    return out
