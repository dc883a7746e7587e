#!/usr/bin/env python3
"""Time of a cold Open MPI build and of an unchanged re-run, against the targets.

    python bench/ompi_build/run.py [--jobs N]

The cold build runs `ftslide build-mpi` with FTSLIDE_CACHE pointing at a fresh
temporary directory (the verified source tarball is copied in, so nothing is
fetched); the re-run repeats the command with nothing changed. Targets: cold
build <= 10 min on 2 cores, unchanged re-run <= 10 s. Takes as long as a build.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from ftslide import ompi_build  # noqa: E402
from ftslide.ui.table import print_table  # noqa: E402

TARGETS = {"cold build": 600.0, "unchanged re-run": 10.0}


def timed_build(cache: Path, jobs: int) -> float:
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "ftslide", "build-mpi", "-j", str(jobs)], cwd=REPO,
                            env={**os.environ, "FTSLIDE_CACHE": str(cache)}, stdout=subprocess.PIPE)
    if result.returncode != 0:
        raise SystemExit(f"run.py: error: ftslide build-mpi failed (exit {result.returncode})")
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="make -j (default: cores)")
    args = parser.parse_args()
    inputs = ompi_build.load_inputs()
    source = ompi_build.cache_root() / "src" / inputs.tarball_name
    if not source.exists():
        print(f"run.py: error: {source} is missing: run ./bootstrap setup first", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="ftslide-build-bench-") as tmp:
        cache = Path(tmp)
        (cache / "src").mkdir()
        shutil.copy2(source, cache / "src" / inputs.tarball_name)
        times = {"cold build": timed_build(cache, args.jobs), "unchanged re-run": timed_build(cache, args.jobs)}
    print_table(["step", "seconds", "target s", "time / target"],
                [[name, f"{t:.1f}", f"{TARGETS[name]:.0f}", f"{t / TARGETS[name]:.2f}x"] for name, t in times.items()])
    print(f"make -j{args.jobs} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
