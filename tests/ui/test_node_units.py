"""Runs the UI's node:test unit tests (tests/ui/*.test.mjs) under pytest."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def test_ui_unit_tests_pass() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    files = sorted(str(p) for p in HERE.glob("*.test.mjs"))
    assert files, "no UI unit tests found"
    result = subprocess.run(
        [node, "--test", *files], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
