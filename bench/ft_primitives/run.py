#!/usr/bin/env python3
"""Latency of agree, revoke-to-error and shrink, side by side for each FT module set.

    python bench/ft_primitives/run.py [--np 2,4,8] [--modules upstream,upstream-star] [--iterations 200]
    python bench/ft_primitives/run.py --np 2,4,8,16 --modules upstream,ours-flood,ours   # revoke: ours vs upstream

Each module set is a list of MCA parameters given to mpirun (MODULE_SETS below);
all sets run in one invocation on the same build, and the table prints each
set's latencies and their ratio to the first set. Runs are oversubscribed on
this machine: absolute numbers are for comparison within one run only.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ftslide.toolchain import mpi  # noqa: E402
from ftslide.errors import FtslideError  # noqa: E402
from ftslide.toolchain.ompi import require_prefix  # noqa: E402
from ftslide.ui.table import print_table  # noqa: E402

SOURCE = Path(__file__).with_name("ft_primitives.c")
# name -> mpirun MCA arguments selecting the agreement and reliable-broadcast modules.
# Our coll/ftera (coll-ftagree/ompi) has the highest priority in our build, so the
# upstream sets exclude it (--mca coll ^ftera) to run upstream's ftagree. Our revoke
# (mpi_ft_reliable_bcast ftslide_lean, revoke-bmg/) is the default; upstream sets
# select upstream's binomial-graph diffusion (bmg) or its all-to-all one (full).
# Upstream's early-terminating agreement (coll_ftagree_agreement 2) is left out: in
# 5.0.7 it returns MPI_ERR_PROC_FAILED with no failure at all.
NO_FTERA = ["--mca", "coll", "^ftera"]
MODULE_SETS = {
    "upstream": [*NO_FTERA, "--mca", "coll_ftagree_agreement", "1", "--mca", "coll_ftagree_era_topology", "1",
                 "--mca", "mpi_ft_reliable_bcast", "bmg"],
    "ours": ["--mca", "coll_ftera_mode", "early", "--mca", "coll_ftera_tree", "knomial4",
             "--mca", "mpi_ft_reliable_bcast", "ftslide_lean"],
    "ours-binomial": ["--mca", "coll_ftera_mode", "early", "--mca", "coll_ftera_tree", "binomial",
                      "--mca", "mpi_ft_reliable_bcast", "ftslide_lean"],
    "ours-binary": ["--mca", "coll_ftera_mode", "early", "--mca", "coll_ftera_tree", "binary",
                    "--mca", "mpi_ft_reliable_bcast", "ftslide_lean"],
    "ours-radix4": ["--mca", "coll_ftera_mode", "early", "--mca", "coll_ftera_tree", "knomial4",
                    "--mca", "mpi_ft_reliable_bcast", "ftslide_lean", "--mca", "mpi_ft_ftslide_radix", "4"],
    "ours-flood": ["--mca", "coll_ftera_mode", "early", "--mca", "coll_ftera_tree", "knomial4",
                   "--mca", "mpi_ft_reliable_bcast", "ftslide_flood"],
    "ours-uniform": ["--mca", "coll_ftera_mode", "uniform", "--mca", "coll_ftera_tree", "knomial4",
                     "--mca", "mpi_ft_reliable_bcast", "ftslide_lean"],
    "upstream-star": [*NO_FTERA, "--mca", "coll_ftagree_agreement", "1", "--mca", "coll_ftagree_era_topology", "2",
                      "--mca", "mpi_ft_reliable_bcast", "bmg"],
    "upstream-full-rbcast": [*NO_FTERA, "--mca", "coll_ftagree_agreement", "1",
                             "--mca", "coll_ftagree_era_topology", "1", "--mca", "mpi_ft_reliable_bcast", "full"],
}
FIELDS = ("agree_us", "allreduce_us", "revoke_us", "shrink_us", "msgs_per_revoke")
RATIOS = ("agree_us", "revoke_us", "shrink_us", "msgs_per_revoke")


def measure(prefix: Path, binary: Path, np: int, mca: list[str], iterations: int) -> dict[str, float]:
    result = mpi.run(prefix, [*mca, "-np", str(np), str(binary), str(iterations), str(max(10, iterations // 4))],
                     timeout=300)
    match = re.search(r"ft_primitives np=\d+ " + " ".join(rf"{f}=([\d.]+)" for f in FIELDS), result.stdout)
    if result.returncode != 0 or match is None:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        tail = next((line for line in lines if "MPI_ERR" in line), lines[-1] if lines else "no output")
        raise FtslideError(f"np {np} with {' '.join(mca)} failed (exit {result.returncode}): {tail}")
    return {field: float(value) for field, value in zip(FIELDS, match.groups())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--np", default="2,4,8", help="comma-separated process counts (default 2,4,8)")
    parser.add_argument("--modules", default=",".join(MODULE_SETS),
                        help=f"comma-separated module sets, the first is the baseline ({', '.join(MODULE_SETS)})")
    parser.add_argument("--iterations", type=int, default=200, help="timed iterations per operation")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per np and module set, the sets interleaved run by run; each value is the "
                             "median over the runs (default 1)")
    args = parser.parse_args()
    if args.repeat < 1:
        print(f"run.py: error: --repeat takes a count of at least 1 (got {args.repeat})", file=sys.stderr)
        return 2
    try:
        counts = [int(n) for n in args.np.split(",")]
        if any(n < 2 for n in counts):
            raise ValueError
    except ValueError:
        print(f"run.py: error: --np takes process counts of at least 2, e.g. 2,4,8 (got {args.np!r})",
              file=sys.stderr)
        return 2
    sets = args.modules.split(",")
    unknown = [name for name in sets if name not in MODULE_SETS]
    if unknown:
        print(f"run.py: error: unknown module set {unknown[0]!r}: choose from {', '.join(MODULE_SETS)}",
              file=sys.stderr)
        return 2
    try:
        prefix = require_prefix()
        binary = mpi.compile_program(prefix, [SOURCE])
        rows = []
        for np in counts:
            base = None
            runs: dict[str, list[dict[str, float]]] = {name: [] for name in sets}
            for _ in range(args.repeat):
                for name in sets:
                    runs[name].append(measure(prefix, binary, np, MODULE_SETS[name], args.iterations))
            for name in sets:
                got = {f: statistics.median(run[f] for run in runs[name]) for f in FIELDS}
                base = base or got
                rows.append([np, name, *(f"{got[f]:.1f}" for f in FIELDS),
                             f"{got['agree_us'] / got['allreduce_us']:.2f}x",
                             *(f"{got[f] / base[f]:.2f}x" if base[f] else "-" for f in RATIOS)])
                print(f"np {np} {name}: done", file=sys.stderr, flush=True)
    except FtslideError as exc:
        print(f"run.py: error: {exc}", file=sys.stderr)
        return 1
    print_table(["np", "modules", "agree us", "allreduce us", "revoke us", "shrink us", "msgs/revoke",
                 "agree/allreduce", f"agree vs {sets[0]}", f"revoke vs {sets[0]}", f"shrink vs {sets[0]}",
                 f"msgs vs {sets[0]}"], rows)
    print("median of per-iteration max over ranks" + (f", median of {args.repeat} interleaved runs"
                                                        if args.repeat > 1 else "")
          + "; revoke: revoke call to the last MPIX_ERR_REVOKED; msgs/revoke: reliable-broadcast messages of all "
          "ranks per revoke (MPI_T counters); oversubscribed on", __import__("os").cpu_count(),
          "cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
