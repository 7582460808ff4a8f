"""``scripts/bench --quick`` works end to end: it exits 0, prints its table, writes
JSON with every section and Markdown, and leaves no process behind. It says nothing
about speed: the figures of a tiny run on a shared machine mean nothing, and tests
never assert on timing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers import processes_with_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SECTIONS = {
    "startup",
    "limits",
    "ingest",
    "latency",
    "fanout",
    "store",
    "scale",
    "sandbox",
    "meta",
    "targets",
    "problems",
    "processes_left",
}


def test_quick_bench_runs_and_reports_every_section(tmp_path: Path) -> None:
    marker = f"AGENT_SESSIONS_BENCH_SMOKE={os.getpid()}"
    env = {**os.environ, marker.split("=")[0]: marker.split("=")[1]}
    result = subprocess.run(
        [str(ROOT / "scripts" / "bench"), "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for figure in (
        "ingest, text chunks",
        "ingest, tool updates",
        "latency at 100/s",
        "latency at 1,000/s",
        "latency at 5,000/s",
        "fan-out to 1 viewer",
        "fan-out to 10 viewers",
        "fan-out to 100 viewers",
        "create latency",
        "RSS growth per session",
        "CPU when idle",
        "start-up",
    ):
        assert figure in result.stdout, figure
    assert "raw sqlite3" in result.stdout and "bare broadcast" in result.stdout
    if shutil.which("bwrap") is not None:
        assert "sandbox: agent start" in result.stdout

    data = json.loads((tmp_path / "latest.json").read_text())
    assert SECTIONS <= set(data)
    assert data["problems"] == [] and data["processes_left"] == []
    assert set(data["ingest"]) == {"text", "tool"} and set(data["latency"]) == {
        "100",
        "1000",
        "5000",
    }
    assert set(data["fanout"]) == {"1", "10", "100"}
    for kind in ("text", "tool"):
        assert (
            data["ingest"][kind]["updates_per_s"] > 0
            and data["limits"][f"sqlite_{kind}"]["rows_per_s"] > 0
        )
        assert all(run["complete"] and run["gaps"] == 0 for run in data["ingest"][kind]["runs"])
    for rate in data["latency"].values():
        for side in ("server", "bare"):
            assert (
                rate[side]["complete"]
                and rate[side]["latency_ms"]["count"] == rate[side]["updates"]
            )
    for fan in data["fanout"].values():
        assert fan["server"]["complete"] and fan["bare"]["complete"] and fan["server"]["gaps"] == 0
    scale = data["scale"]
    assert scale["agent_processes"] == scale["sessions"] == scale["active_reported"]
    assert scale["agents_left_after_stop"] == []
    startup = data["startup"]
    assert startup["median_s"] > 0 and startup["bare_median_s"] > 0
    # a restart and a first start per run, plus the main server's first start
    assert len(startup["first_runs_s"]) == len(startup["runs_s"]) + 1
    assert [t["target"] for t in data["targets"]] and all(
        isinstance(t["met"], bool) for t in data["targets"]
    )

    markdown = (tmp_path / "latest.md").read_text()
    assert (
        "| figure | value | limit (same run) |" in markdown
        and "| target | value | met |" in markdown
    )
    # every process the run started (servers, agents, relays, clients) is gone
    assert processes_with_env(marker) == []
