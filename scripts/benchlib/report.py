"""Results → the summary rows (figure, limit, ratio, target), the table, Markdown, JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["rows", "table", "targets", "write"]

# Issue 14's targets, each a ratio to a limit measured in the same run (or a bound).
TARGET_INGEST_RAW = 0.5  # text ingest ÷ raw sqlite3, same rows
TARGET_INGEST_RELAY = 0.7  # text ingest ÷ the bare relay
TARGET_TOOL_RAW = 0.7  # tool-update ingest ÷ raw sqlite3
TARGET_P99_MS = {"1000": 5.0, "5000": 15.0}
TARGET_FANOUT = {"1": 0.8, "100": 1.0}  # deliveries/s ÷ the bare broadcast
TARGET_RSS_MB = 2.0
TARGET_STARTUP_RATIO = 1.3  # start-up ÷ a bare uvicorn app's with SQLAlchemy's asyncio ORM
TARGET_PG_RAW = 0.5  # PostgreSQL text ingest ÷ raw asyncpg (only with BENCH_PG_URL)


def _num(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "–"
    if digits == 0:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def _x(value: float | None, limit: float | None) -> str:
    if value is None or not limit:
        return "–"
    return f"{value / limit:.2f}×"


def _lat(d: dict[str, Any] | None) -> str:
    if not d or d.get("p50") is None:
        return "–"
    return f"{d['p50']:.2f} / {d['p99']:.2f} / {d['max']:.1f}"


def _ratio_target(
    name: str, value: float | None, limit: float | None, bound: float
) -> dict[str, Any]:
    ratio = (value or 0) / limit if limit else None
    return {"target": name, "value": ratio, "met": ratio is not None and ratio >= bound}


def targets(r: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target with its measured value and whether it is met."""
    ingest, limits = r["ingest"], r["limits"]
    text, tool = ingest["text"], ingest["tool"]
    out = [
        _ratio_target(
            f"text ingest ≥ {TARGET_INGEST_RAW} × raw sqlite3 (same run)",
            text["updates_per_s"],
            limits["sqlite_text"]["rows_per_s"],
            TARGET_INGEST_RAW,
        ),
        _ratio_target(
            f"text ingest ≥ {TARGET_INGEST_RELAY} × the bare relay (same run)",
            text["updates_per_s"],
            text["bare_updates_per_s"],
            TARGET_INGEST_RELAY,
        ),
        _ratio_target(
            f"tool-update ingest ≥ {TARGET_TOOL_RAW} × raw sqlite3 (same run)",
            tool["updates_per_s"],
            limits["sqlite_tool"]["rows_per_s"],
            TARGET_TOOL_RAW,
        ),
    ]
    for rate, bound in TARGET_P99_MS.items():
        p99 = (r["latency"].get(rate, {}).get("server", {}).get("latency_ms") or {}).get("p99")
        out.append(
            {
                "target": f"p99 ≤ {bound:g} ms at {int(rate):,} updates/s",
                "value": p99,
                "met": p99 is not None and p99 <= bound,
            }
        )
    for viewers, bound in TARGET_FANOUT.items():
        fan = r["fanout"].get(viewers)
        if fan is not None:
            out.append(
                _ratio_target(
                    f"fan-out to {viewers} viewer{'s' if viewers != '1' else ''}"
                    f" ≥ {bound} × bare broadcast",
                    fan["server"]["deliveries_per_s"],
                    fan["bare"]["deliveries_per_s"],
                    bound,
                )
            )
    out.append(
        {
            "target": f"RSS growth ≤ {TARGET_RSS_MB:g} MB per session"
            f" ({r['scale']['sessions']} sessions)",
            "value": r["scale"]["rss_growth_per_session_mb"],
            "met": r["scale"]["rss_growth_per_session_mb"] <= TARGET_RSS_MB,
        }
    )
    pg = r.get("pg")
    if pg:
        out.append(
            _ratio_target(
                f"PostgreSQL text ingest ≥ {TARGET_PG_RAW} × raw asyncpg (same run)",
                pg["updates_per_s"],
                pg["limit"]["rows_per_s"],
                TARGET_PG_RAW,
            )
        )
    startup = r["startup"]
    limit = startup.get("stack_median_s") or startup["bare_median_s"]  # older results
    # the median of each round's ratio (the two started back to back), where measured
    ratio = startup.get("stack_ratio_median", startup["median_s"] / limit)
    out.append(
        {
            "target": f"start-up (schema current) ≤ {TARGET_STARTUP_RATIO:g} × bare uvicorn"
            " with SQLAlchemy's asyncio ORM opening the database (median of the rounds)",
            "value": ratio,
            "met": ratio <= TARGET_STARTUP_RATIO,
        }
    )
    return out


def _best_of(limit: dict[str, Any]) -> str:
    runs = limit.get("runs_rows_per_s") or []
    return f" (best of {len(runs)})" if len(runs) > 1 else ""


def rows(r: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """(figure, value, limit measured in the same run, value ÷ limit, server CPU and notes)."""
    lim = r["limits"]
    out: list[tuple[str, str, str, str, str]] = []
    for kind, label in (("text", "text chunks ~100 B"), ("tool", "tool updates ~5 KB")):
        ing = r["ingest"][kind]
        sqlite = lim[f"sqlite_{kind}"]["rows_per_s"]
        out.append(
            (
                f"ingest, {label} (updates/s, stored + delivered)",
                _num(ing["updates_per_s"]),
                f"raw sqlite3 {_num(sqlite)} rows/s{_best_of(lim[f'sqlite_{kind}'])}",
                _x(ing["updates_per_s"], sqlite),
                f"{ing['cpu_us_per_update']:.0f} µs/update",
            )
        )
        out.append(
            (
                "  same through the bare relay (no storage)",
                _num(ing["bare_updates_per_s"]),
                "",
                "",
                f"agent writes {_num(ing['producer_per_s'])}/s",
            )
        )
        inline = lim.get(f"sqlite_{kind}_inline")
        if inline:
            out.append(
                (
                    "  raw sqlite3 with SQLite's own checkpoints (in its commits)",
                    "",
                    f"{_num(inline['rows_per_s'])} rows/s{_best_of(inline)}",
                    _x(ing["updates_per_s"], inline["rows_per_s"]),
                    "the limit before the server's checkpoint thread",
                )
            )
    for rate, data in r["latency"].items():
        server, bare = data["server"], data["bare"]
        sl, bl = server["latency_ms"] or {}, bare["latency_ms"] or {}
        out.append(
            (
                f"latency at {int(rate):,}/s, p50 / p99 / max (ms)",
                _lat(sl),
                f"bare relay {_lat(bl)}",
                f"p99 {_x(sl.get('p99'), bl.get('p99'))}",
                f"{server['cpu_us_per_update']:.0f} µs/update",
            )
        )
    for viewers, data in r["fanout"].items():
        server, bare = data["server"], data["bare"]
        out.append(
            (
                f"fan-out to {viewers} viewer{'s' if viewers != '1' else ''} (deliveries/s)",
                _num(server["deliveries_per_s"]),
                f"bare broadcast {_num(bare['deliveries_per_s'])}",
                _x(server["deliveries_per_s"], bare["deliveries_per_s"]),
                f"{server['cpu_us_per_delivery']:.1f} µs/delivery"
                f" (bare {bare['cpu_us_per_delivery']:.1f})",
            )
        )
    sc = r["scale"]
    agent = lim["agent_start_s"]
    out.append(
        (
            f"scale: create latency p50 / p99 (ms), {sc['sessions']} sessions",
            f"{sc['create_ms']['p50']:.0f} / {sc['create_ms']['p99']:.0f}",
            f"demo agent start {agent['p50'] * 1e3:.0f} ms",
            _x(sc["create_ms"]["p50"], agent["p50"] * 1e3),
            "",
        )
    )
    out.append(
        (
            "scale: server RSS idle → 1 → all sessions (MB)",
            f"{sc['rss_idle_mb']:.0f} → {sc['rss_one_session_mb']:.0f} → {sc['rss_all_mb']:.0f}",
            "",
            "",
            f"agents {sc['agent_rss_each_mb']:.1f} MB RSS each",
        )
    )
    out.append(
        (
            "scale: server RSS growth per session (MB)",
            f"{sc['rss_growth_per_session_mb']:.2f}",
            "",
            "",
            "",
        )
    )
    out.append(
        (
            f"scale: CPU when idle, {sc['sessions']} live sessions (% of a core)",
            f"{sc['idle_cpu_percent']:.1f}",
            "",
            "",
            f"agents {sc['agents_idle_cpu_percent']:.1f} % in all",
        )
    )
    sb = r.get("sandbox", {})
    if "start_added_ms" in sb:
        out.append(
            (
                "sandbox: agent start, bubblewrap on vs off (ms, median)",
                f"{sb['start_on_median_ms']:.0f}",
                f"off {sb['start_off_median_ms']:.0f}",
                f"+{sb['start_added_ms']:.0f} ms",
                f"bubblewrap's processes {sb['sandbox_rss_mb']:.1f} MB RSS per agent",
            )
        )
        wall = sb["wall_added_ms"]
        out.append(
            (
                "sandbox: what the wall adds to a start, network open / none / proxy (ms)",
                f"{wall['open']:.0f} / {wall['none']:.0f} / {wall['proxy']:.0f}",
                "target 50",
                "",
                "",
            )
        )
    st = r["startup"]
    out.append(
        (
            "start-up: process start → /readyz (s, median), schema current",
            f"{st['median_s']:.2f}",
            f"bare uvicorn {st['bare_median_s']:.2f}",
            _x(st["median_s"], st["bare_median_s"]),
            f"max {st['max_s']:.2f}",
        )
    )
    if "stack_median_s" in st:
        out.append(
            (
                "  against uvicorn + SQLAlchemy asyncio ORM opening the database",
                f"{st['median_s']:.2f}",
                f"bare stack {st['stack_median_s']:.2f}",
                _x(st["median_s"], st["stack_median_s"]),
                f"round ratios' median {st['stack_ratio_median']:.2f}×"
                if "stack_ratio_median" in st
                else "the target's limit",
            )
        )
    if "first_median_s" in st:
        out.append(
            (
                "  first start on a new database (migrations run)",
                f"{st['first_median_s']:.2f}",
                f"bare uvicorn {st['bare_median_s']:.2f}",
                _x(st["first_median_s"], st["bare_median_s"]),
                "",
            )
        )
    pg = r.get("pg")
    if pg:
        out.append(
            (
                "PostgreSQL: ingest, text chunks (updates/s, stored + delivered)",
                _num(pg["updates_per_s"]),
                f"raw asyncpg {_num(pg['limit']['rows_per_s'])} rows/s",
                _x(pg["updates_per_s"], pg["limit"]["rows_per_s"]),
                f"{pg['cpu_us_per_update']:.0f} µs/update",
            )
        )
    return out


def table(r: dict[str, Any]) -> str:
    header = ("figure", "value", "limit (same run)", "÷ limit", "server CPU, notes")
    body = rows(r)
    widths = [max(len(str(row[i])) for row in [header, *body]) for i in range(len(header))]

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(str(cell).ljust(widths[i]) for i, cell in enumerate(row)).rstrip()

    lines = [line(header), line(tuple("-" * w for w in widths)), *(line(row) for row in body), ""]
    for t in targets(r):
        value = t["value"]
        shown = "–" if value is None else (f"{value:,.2f}" if value < 100 else f"{value:,.0f}")
        lines.append(f"[{'met ' if t['met'] else 'MISS'}] {t['target']}: {shown}")
    if r.get("problems"):
        lines.append("")
        lines.extend(f"problem: {p}" for p in r["problems"])
    return "\n".join(lines)


def markdown(r: dict[str, Any], notes: str = "") -> str:
    meta = r["meta"]
    out = [
        "# Benchmark results",
        "",
        f"`./scripts/bench` on {meta['time']} (commit {meta.get('commit') or 'unknown'}): "
        f"{meta['cpus']} CPUs, Python {meta['python']}, "
        f"1-minute load average {meta['loadavg_before'][0]:.2f} at the start, "
        + "".join(
            f"{v:.2f} at {k.split(' (')[0]}, "
            for k, v in meta.get("loadavg_1min_per_phase", {}).items()
        )
        + f"{meta['loadavg_after'][0]:.2f} at the end; {meta['seconds']:.0f} s in all.",
        "",
        "| figure | value | limit (same run) | ÷ limit | server CPU, notes |",
        "|---|---|---|---|---|",
    ]
    out += [f"| {' | '.join(cell.replace('|', '/') or ' ' for cell in row)} |" for row in rows(r)]
    out += ["", "| target | value | met |", "|---|---|---|"]
    for t in targets(r):
        value = t["value"]
        shown = "–" if value is None else (f"{value:,.2f}" if value < 100 else f"{value:,.0f}")
        out.append(f"| {t['target']} | {shown} | {'yes' if t['met'] else '**no**'} |")
    st = r.get("store") or {}
    if st.get("commits"):
        out += [
            "",
            f"Store over the ingest/latency/fan-out run: {st['commits']:.0f} commits, "
            f"{st['rows_per_commit']:.1f} rows per commit on average, "
            f"{st['mean_commit_ms']:.2f} ms mean commit.",
        ]
    if r.get("problems"):
        out += ["", "Problems seen in this run:", *(f"- {p}" for p in r["problems"])]
    if notes:
        out += ["", notes.strip()]
    return "\n".join(out) + "\n"


def write(r: dict[str, Any], directory: Path, notes_file: Path | None = None) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    r = {**r, "targets": targets(r)}
    json_path = directory / "latest.json"
    json_path.write_text(json.dumps(r, indent=1, default=str) + "\n")
    notes = notes_file.read_text() if notes_file is not None and notes_file.is_file() else ""
    md_path = directory / "latest.md"
    md_path.write_text(markdown(r, notes))
    return json_path, md_path
