"""The table, ``scale.json``, ``scale.md`` and ``scale.png`` of ``scripts/bench-scale``.

Flatness is the cost at a size relative to the smallest size: a latency's ratio, or a
rate's inverse ratio (a rate half as fast costs 2x). The issue's target is <= 1.5x.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["METRICS", "flatness", "table", "write"]

TARGET = 1.5
# (key, label, kind, getter): kind "rate" (higher is better) or "ms" (lower is better)
METRICS: list[tuple[str, str, str]] = [
    ("ingest", "ingest, updates/s", "rate"),
    ("replay", "WS replay of 100k, msgs/s", "rate"),
    ("messages_first", "messages, first page", "ms"),
    ("messages_deep", "messages, deep page (cursor)", "ms"),
    ("sessions_first", "sessions, first page", "ms"),
    ("sessions_deep", "sessions, deep page (cursor)", "ms"),
    ("runs_first", "runs, first page", "ms"),
    ("runs_deep", "runs, deep page (cursor)", "ms"),
    ("runs_of_session", "runs of one session", "ms"),
]


def value(size: dict[str, Any], key: str, cpu: bool = False) -> float | None:
    """The figure (wall: rate or p50 ms), or with ``cpu`` the server's CPU per item
    (us per update or message, ms per request): lower is better for all of those."""
    if key == "ingest":
        v = size["ingest"]["cpu_us_per_update" if cpu else "updates_per_s"]
    elif key == "replay":
        v = size["replay"]["server_cpu_us_per_message" if cpu else "messages_per_s"]
    else:
        v = size["pages"][key]["server_cpu_ms" if cpu else "p50_ms"]
    return float(v) if v is not None else None


def flatness(results: dict[str, Any], cpu: bool = False) -> dict[str, list[float | None]]:
    """Per metric, the cost at each size relative to the smallest (1.0 first)."""
    sizes = results["sizes"]
    out: dict[str, list[float | None]] = {}
    for key, _label, kind in METRICS:
        base = value(sizes[0], key, cpu) if sizes else None
        ratios: list[float | None] = []
        for size in sizes:
            v = value(size, key, cpu)
            if v is None or not base:
                ratios.append(None)
            else:
                ratios.append(base / v if kind == "rate" and not cpu else v / base)
        out[key] = ratios
    return out


def _cpu_label(label: str, kind: str) -> str:
    name = label.split(",")[0] if kind == "rate" else label
    return f"{name}, server CPU {'us per item' if kind == 'rate' else 'ms per request'}"


def _fmt(v: float | None, kind: str) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if kind == "rate" else f"{v:.2f}"


def _millions(n: float) -> str:
    """1M for 999 910 messages (the built count, a little under the nominal size)."""
    return f"{n / 1e6:.2g}M" if n >= 950_000 else f"{n / 1e3:.3g}k"


def table(results: dict[str, Any]) -> str:
    sizes = results["sizes"]
    flat = flatness(results)
    heads = [_millions(s["messages"]) for s in sizes]
    lines = [
        "| | " + " | ".join(heads) + " | worst / smallest |",
        "|---|" + "---:|" * (len(sizes) + 1),
        "| database file, GB | " + " | ".join(f"{s['file_gb']:.1f}" for s in sizes) + " | |",
        "| runs in the database | " + " | ".join(f"{s['runs']:,}" for s in sizes) + " | |",
        "| build (raw sqlite3), rows/s | "
        + " | ".join(f"{s['build']['rows_per_s']:,.0f}" for s in sizes)
        + " | |",
        "| server start-up, s | " + " | ".join(f"{s['startup_s']:.2f}" for s in sizes) + " | |",
    ]
    for key, label, kind in METRICS:
        unit = "" if kind == "rate" else ", ms (p50)"
        worst = max((r for r in flat[key] if r is not None), default=None)
        mark = "" if worst is None else (" ok" if worst <= TARGET else " **over 1.5x**")
        lines.append(
            f"| {label}{unit} | "
            + " | ".join(_fmt(value(s, key), kind) for s in sizes)
            + f" | {'-' if worst is None else f'{worst:.2f}x'}{mark} |"
        )
    cpu_flat = flatness(results, cpu=True)
    for key, label, kind in METRICS:
        worst = max((r for r in cpu_flat[key] if r is not None), default=None)
        mark = "" if worst is None else (" ok" if worst <= TARGET else " **over 1.5x**")
        lines.append(
            f"| {_cpu_label(label, kind)} | "
            + " | ".join(_fmt(value(s, key, True), "ms") for s in sizes)
            + f" | {'-' if worst is None else f'{worst:.2f}x'}{mark} |"
        )
    live = results.get("live")
    if live:
        per = live["rss_growth_per_session_mb"]
        lines += [
            "",
            f"{live['sessions']} live sessions with idle agents: server RSS "
            f"{live['rss_one_session_mb']:.0f} MB with one, {live['rss_all_mb']:.0f} MB with "
            f"all; growth **{per:.3f} MB per session** (target < 2 MB; "
            f"{'met' if per < 2 else 'missed'}); each demo agent process "
            f"{live['agent_rss_each_mb']:.0f} MB RSS of its own; session create p50 "
            f"{live['create_ms']['p50']:.0f} ms; idle server CPU "
            f"{live['idle_cpu_percent']:.1f}%.",
        ]
    if results["problems"]:
        lines += ["", "Problems: " + "; ".join(results["problems"])]
    return "\n".join(lines)


def chart(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = results["sizes"]
    xs = [s["messages"] / 1e6 for s in sizes]
    fig, axes = plt.subplots(1, 3, figsize=(16, 5))
    panels = (
        (axes[0], flatness(results), "wall time (rate or p50) relative to the smallest"),
        (axes[1], flatness(results, cpu=True), "server CPU per item relative to the smallest"),
    )
    highest = max(
        [2.0] + [r for _, flat, _ in panels for v in flat.values() for r in v if r is not None]
    )
    for ax, flat, title in panels:
        for key, label, _kind in METRICS:
            ax.plot(
                xs, [r if r is not None else float("nan") for r in flat[key]], "o-", label=label
            )
        ax.axhline(TARGET, color="red", linestyle="--", linewidth=1, label="target: 1.5x")
        ax.set_ylim(0, highest * 1.1)
        ax.set_ylabel("cost relative to the smallest database (flat = 1)")
        ax.set_title(title, fontsize=10)
    axes[0].legend(fontsize=7, loc="upper left")
    for key, label, kind in METRICS:
        if kind == "ms":
            axes[2].plot(xs, [value(s, key) for s in sizes], "o-", label=label)
    axes[2].set_yscale("log")
    axes[2].set_ylabel("p50 latency, ms (log)")
    axes[2].set_title("page latency, p50", fontsize=10)
    axes[2].legend(fontsize=7, loc="upper left")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xticks(xs, [_millions(s["messages"]) for s in sizes])
        ax.minorticks_off()
        ax.set_xlabel("messages in the database (10 000 sessions)")
    fig.suptitle("Cost as work grows (scripts/bench-scale)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write(results: dict[str, Any], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    results = {
        **results,
        "flatness": flatness(results),
        "flatness_cpu": flatness(results, cpu=True),
    }
    json_path = out / "scale.json"
    json_path.write_text(json.dumps(results, indent=1, default=str) + "\n")
    meta = results["meta"]
    md = out / "scale.md"
    md.write_text(
        "# Cost as work grows (`scripts/bench-scale`)\n\n"
        f"{meta['time']}, {meta['cpus']} CPUs, Python {meta['python']}, "
        f"{meta['seconds']:.0f} s in all; load average after: "
        f"{', '.join(f'{x:.1f}' for x in meta['loadavg_after'])}.\n\n"
        + table(results)
        + "\n\n![cost as work grows](scale.png)\n"
    )
    png = out / "scale.png"
    chart(results, png)
    return [json_path, md, png]
