"""Does bubblewrap work on this host? Run it once, the way agents are run (user, PID and
network namespaces), and say why not."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from agent_bridge.sandbox import SandboxPolicy, bwrap_argv

__all__ = ["probe_bwrap"]

PROBE_TIMEOUT = 10.0


def probe_bwrap(scratch: Path, program: str = "bwrap") -> tuple[str | None, str | None]:
    """(the bwrap executable, None) when a sandbox starts here, else (None, why)."""
    found = shutil.which(program)
    if found is None:
        return None, "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)"
    scratch.mkdir(parents=True, exist_ok=True)
    policy = SandboxPolicy(workspace=scratch, home=scratch, network="none", bwrap=found)
    try:
        result = subprocess.run(  # noqa: S603 - bwrap with our own arguments
            bwrap_argv(policy, ["/bin/true"]),
            capture_output=True,
            timeout=PROBE_TIMEOUT,
            check=False,
            env={"PATH": "/usr/bin:/bin"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"bubblewrap could not run: {exc}"
    if result.returncode != 0:
        tail = result.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        return (
            None,
            f"bubblewrap cannot make a sandbox here ({tail[0]}); user namespaces may be off",
        )
    return found, None
