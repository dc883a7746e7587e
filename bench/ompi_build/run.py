#!/usr/bin/env python3
"""Time of a cold Open MPI build, with Fortran and without, and of an unchanged re-run, against the targets.

    python bench/ompi_build/run.py [--jobs N] [--only fortran|c]

Each cold build runs `ftslide build-mpi` with FTSLIDE_CACHE pointing at a fresh temporary directory
(the verified source tarball is copied in, so nothing is fetched); the re-run repeats the first
command with nothing changed. "fortran" is the repository's inputs as they are; "c" the same inputs
with `--disable-mpi-fortran` in place of the Fortran option, built from a copy of the package and of
the build's inputs in a temporary folder (the repository is not touched). Both builds run one after
the other in one run, and the table gives their ratio: what Fortran costs. Targets: cold build with
Fortran <= 12 min on 2 cores, unchanged re-run <= 10 s. Takes as long as two builds. Other work on
the machine slows a build down: the table gives each build's load average at its start and end, and
its CPU time (user + system of all its processes), which other work hardly changes; on an idle
machine with make -j2 the wall time is about CPU / 2 plus the serial steps (autogen, configure).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from ftslide.toolchain import ompi as ompi_build  # noqa: E402
from ftslide.ui.table import print_table  # noqa: E402

FORTRAN, C_ONLY = "cold build, C and Fortran", "cold build, C only (--disable-mpi-fortran)"
TARGETS = {FORTRAN: 720.0, "unchanged re-run": 10.0}
FORTRAN_OPTION = "--enable-mpi-fortran=usempif08"


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_build(source: Path, cache: Path, jobs: int) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system of every process of the build) and the load average
    before and after one `ftslide build-mpi`."""
    started, cpu, before = time.monotonic(), children_cpu(), load()
    result = subprocess.run([sys.executable, "-m", "ftslide", "build-mpi", "-j", str(jobs)], cwd=source,
                            env={**os.environ, "FTSLIDE_CACHE": str(cache)}, stdout=subprocess.PIPE)
    if result.returncode != 0:
        raise SystemExit(f"run.py: error: ftslide build-mpi in {source} failed (exit {result.returncode})")
    return time.monotonic() - started, children_cpu() - cpu, f"{before} -> {load()}"


def c_only_copy(where: Path) -> Path:
    """A copy of the package and of every input of the build, with Fortran disabled."""
    inputs = ompi_build.load_inputs()
    copy = where / "repo"
    folders = {"ftslide", "ompi-ulfm", *(o.source.relative_to(REPO).parts[0] for o in inputs.overlays)}
    for folder in sorted(folders):
        shutil.copytree(REPO / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    config = copy / "ompi-ulfm" / "build.toml"
    text = config.read_text()
    if f'"{FORTRAN_OPTION}"' not in text:
        raise SystemExit(f"run.py: error: {FORTRAN_OPTION} is not among the configure options of build.toml")
    config.write_text(text.replace(f'"{FORTRAN_OPTION}"', '"--disable-mpi-fortran"'))
    return copy


def fresh_cache(where: Path, tarball: Path) -> Path:
    cache = where / "cache"
    (cache / "src").mkdir(parents=True)
    shutil.copy2(tarball, cache / "src" / tarball.name)
    return cache


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="make -j (default: cores)")
    parser.add_argument("--only", choices=("fortran", "c"), help="build one variant only")
    args = parser.parse_args()
    inputs = ompi_build.load_inputs()
    source = ompi_build.cache_root() / "src" / inputs.tarball_name
    if not source.exists():
        print(f"run.py: error: {source} is missing: run ./bootstrap setup first", file=sys.stderr)
        return 1
    rows = {}
    with tempfile.TemporaryDirectory(prefix="ftslide-build-bench-") as tmp:
        if args.only != "c":
            cache = fresh_cache(Path(tmp) / "fortran", source)
            rows[FORTRAN] = timed_build(REPO, cache, args.jobs)
            rows["unchanged re-run"] = timed_build(REPO, cache, args.jobs)
            shutil.rmtree(cache)
        if args.only != "fortran":
            copy = c_only_copy(Path(tmp) / "c")
            rows[C_ONLY] = timed_build(copy, fresh_cache(Path(tmp) / "c", source), args.jobs)
    print_table(["step", "wall s", "CPU s", "target s", "wall / target", "load average (start -> end)"],
                [[name, f"{wall:.1f}", f"{cpu:.0f}", f"{TARGETS[name]:.0f}" if name in TARGETS else "",
                  f"{wall / TARGETS[name]:.2f}x" if name in TARGETS else "", loads]
                 for name, (wall, cpu, loads) in rows.items()])
    if FORTRAN in rows and C_ONLY in rows:
        (wall_f, cpu_f, _), (wall_c, cpu_c, _) = rows[FORTRAN], rows[C_ONLY]
        print(f"Fortran / C only: wall {wall_f / wall_c:.2f}x, CPU {cpu_f / cpu_c:.2f}x "
              f"(other work on the machine stretches the wall time, hardly the CPU time)")
    print(f"make -j{args.jobs} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
