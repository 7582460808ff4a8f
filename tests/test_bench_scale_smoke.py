"""``scripts/bench-scale`` works end to end on small sizes: its raw inserts still fit the
server's schema (a migration that adds a required column to messages, runs or sessions
breaks this first), the server serves every page on the built file, the replay sends the
whole session, and it writes JSON, Markdown and the chart, leaving no process behind.
Nothing about speed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers import processes_with_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_quick_bench_scale_runs_and_reports(tmp_path: Path) -> None:
    marker = f"AGENT_SESSIONS_BENCH_SCALE_SMOKE={os.getpid()}"
    env = {**os.environ, marker.split("=")[0]: marker.split("=")[1]}
    result = subprocess.run(
        [
            str(ROOT / "scripts" / "bench-scale"),
            "--quick",
            "--sizes",
            "20000,40000",
            "--live",
            "2",
            "--out",
            str(tmp_path),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WS replay" in result.stdout and "runs, deep page (cursor)" in result.stdout
    data = json.loads((tmp_path / "scale.json").read_text())
    assert data["problems"] == []
    assert [size["messages"] for size in data["sizes"]] == [19_990, 39_970]
    for size in data["sizes"]:
        assert size["replay"]["messages"] == data["meta"]["big_session_messages"]
        assert size["ingest"]["complete"]
        assert all(page["bytes"] > 0 for page in size["pages"].values())
    assert data["live"]["agent_processes"] == data["live"]["sessions"] == 2
    assert (tmp_path / "scale.md").read_text().startswith("# Cost as work grows")
    assert (tmp_path / "scale.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert processes_with_env(marker) == []


def test_quick_search_bench_runs_on_sqlite(tmp_path: Path) -> None:
    """``--search --quick``: it builds the search index the way migration 0011 does (the
    benchmark reads the migration's statements), searches and floods through the server
    with the index and without it."""
    result = subprocess.run(
        [
            str(ROOT / "scripts" / "bench-scale"),
            "--search",
            "--quick",
            "--rounds",
            "1",
            "--out",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads((tmp_path / "search.json").read_text())
    sqlite = data["databases"]["sqlite"]
    assert sqlite["search"] and sqlite["ingest"]["indexed"]["runs"]
