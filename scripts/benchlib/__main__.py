"""``python -m benchlib [--quick] [--out DIR]``: run the suite, print the table, write
``latest.json`` and ``latest.md`` (with ``notes.md`` from the same folder appended).
``--only startup`` (or ``sandbox``) runs that phase alone and prints its figures (no
files)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib.procs import ROOT, Tracker
from benchlib.report import table, write
from benchlib.sandbox import phase_sandbox
from benchlib.suite import FULL, QUICK, Context, Sizes, phase_startup, run_suite


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="tiny sizes: checks that everything works"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "bench" / "results",
        help="where latest.json and latest.md go (default: bench/results)",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the temporary directory (logs, databases)"
    )
    parser.add_argument(
        "--only",
        choices=["startup", "sandbox"],
        help="run this phase alone; print its figures as JSON",
    )
    args = parser.parse_args(argv)
    from server import malloc

    malloc.tune()  # as the server's: the raw limits measured here get the same allocator
    workdir = Path(tempfile.mkdtemp(prefix="agent-sessions-bench-"))
    started = time.monotonic()

    def log(text: str) -> None:
        print(f"==> [{time.monotonic() - started:5.1f} s] {text}", file=sys.stderr, flush=True)

    log(f"working in {workdir}")
    if args.only == "startup":
        return _startup_only(QUICK if args.quick else FULL, workdir, log)
    if args.only == "sandbox":
        return _sandbox_only(QUICK if args.quick else FULL, workdir)
    try:
        results = run_suite(QUICK if args.quick else FULL, workdir, log)
    except Exception:
        log(f"failed; logs kept in {workdir}")
        raise
    print(table(results))
    json_path, md_path = write(results, args.out, args.out / "notes.md")
    log(f"wrote {json_path} and {md_path}")
    if args.keep or results["problems"]:
        log(f"logs kept in {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if results["problems"] or results["processes_left"] else 0


def _startup_only(sizes: Sizes, workdir: Path, log: Any) -> int:
    ctx = Context(sizes, workdir, log=log)
    try:
        result = phase_startup(ctx)
    finally:
        ctx.tracker.stop_all()
        shutil.rmtree(workdir, ignore_errors=True)
    result["ratio_bare"] = result["median_s"] / result["bare_median_s"]
    result["ratio_stack"] = result["median_s"] / result["stack_median_s"]
    print(json.dumps(result, indent=2))
    return 0


def _sandbox_only(sizes: Sizes, workdir: Path) -> int:
    tracker = Tracker()
    try:
        result = phase_sandbox(tracker, workdir, sizes.sandbox_runs)
    finally:
        tracker.stop_all()
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
