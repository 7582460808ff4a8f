"""The UI's pure modules (markdown.js, diff.js, stream.js, patch.js) have node:test tests
(tests/ui/*.test.mjs); this runs them, so CI runs them with the rest."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_the_ui_modules_pass_their_node_tests() -> None:
    node = shutil.which("node")
    assert node is not None, "node is needed (scripts/check installs typescript with it)"
    files = sorted(HERE.glob("*.test.mjs"))
    assert {f.name for f in files} >= {
        "markdown.test.mjs",
        "diff.test.mjs",
        "stream.test.mjs",
        "patch.test.mjs",
        "prompt-helpers.test.mjs",
    }
    result = subprocess.run(
        # The static modules are plain .js ES modules (no package.json says so).
        [node, "--experimental-detect-module", "--test", *map(str, files)],
        cwd=HERE.parents[1],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "# fail 0" in result.stdout
