#!/usr/bin/env python3
"""Agree latency with 1-3 ranks dying at its start, ours against upstream's (agree_failures.c).

    python bench/ft_primitives/agree_failures.py [--np 4,8] [--failures 1,2,3] [--runs 5] [--modules upstream,ours]

One measurement per mpirun (the victims die); each (np, failures, module set) is run --runs times, the
module sets interleaved run by run, and the median is printed with its ratio to the first set. The time
includes the runtime's report of the deaths, which dominates it. Module sets, their prefixes (``release``:
upstream's release) and the transports are those of run.py.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ftslide.toolchain import mpi  # noqa: E402
from ftslide.errors import FtslideError  # noqa: E402
from ftslide.ui.table import print_table  # noqa: E402
from run import MODULE_SETS, TRANSPORTS, prefixes, programs  # noqa: E402

SOURCE = Path(__file__).with_name("agree_failures.c")
LINE = re.compile(r"agree_failures np=(\d+) k=(\d+) us=([\d.]+) rc=(\S+) survivors=(\d+)")


def measure(prefix: Path, binary: Path, np: int, k: int, mca: list[str]) -> float:
    result = mpi.run(prefix, [*TRANSPORTS, *mca, "-np", str(np), str(binary), str(k)], timeout=120)
    match = LINE.search(result.stdout)
    if match is None or match[4] != "MPIX_ERR_PROC_FAILED" or int(match[5]) != np - k:
        raise FtslideError(f"np {np} k {k} with {' '.join(mca) or 'no option'} on {prefix}: unexpected result "
                           f"(exit {result.returncode}): {result.stdout.strip()[-300:]} {result.stderr.strip()[-300:]}")
    if "agree_failures finalized=1" not in result.stdout:  # finalize_guard.h ended a hung MPI_Finalize
        print(f"  np {np} k {k} on {prefix}: MPI_Finalize hung and was ended (the measurement counts)",
              file=sys.stderr, flush=True)
    return float(match[3])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--np", default="4,8")
    parser.add_argument("--failures", default="1,2,3")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--modules", default="upstream,ours")
    args = parser.parse_args()
    counts = [int(n) for n in args.np.split(",")]
    failures = [int(k) for k in args.failures.split(",")]
    modules = args.modules.split(",")
    try:
        unknown = [m for m in modules if m not in MODULE_SETS]
        if unknown:
            raise FtslideError(f"unknown module set {unknown[0]!r} (known: {', '.join(MODULE_SETS)})")
        if any(k < 1 for k in failures) or any(n < 3 for n in counts):
            raise FtslideError("--failures takes counts of at least 1 and --np counts of at least 3")
        prefix_of = prefixes(modules)
        binary_of = programs(SOURCE, prefix_of)
        rows = []
        for np in counts:
            for k in failures:
                if k > np - 2:
                    continue  # at least 2 survivors
                samples: dict[str, list[float]] = {m: [] for m in modules}
                for _ in range(args.runs):
                    for m in modules:
                        samples[m].append(measure(prefix_of[m], binary_of[m], np, k, MODULE_SETS[m]))
                base = statistics.median(samples[modules[0]])
                for m in modules:
                    med = statistics.median(samples[m])
                    rows.append([np, k, m, f"{med / 1000:.1f}", f"{min(samples[m]) / 1000:.1f}",
                                 f"{max(samples[m]) / 1000:.1f}", f"{med / base:.2f}x"])
                print(f"np {np} k {k}: done", file=sys.stderr)
    except FtslideError as exc:
        print(f"agree_failures.py: error: {exc}", file=sys.stderr)
        return 1
    print_table(["np", "failures", "modules", "median ms", "min ms", "max ms", f"vs {modules[0]}"], rows)
    print(f"{args.runs} runs each, module sets interleaved; time from the victims' death to the agreement's return")
    return 0


if __name__ == "__main__":
    sys.exit(main())
