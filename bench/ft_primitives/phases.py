#!/usr/bin/env python3
"""agree, iagree, shrink, ishrink and revoke before a failure, first call after it, later calls (ft_phases.c).

    python bench/ft_primitives/phases.py [--np 4,8,16] [--ops detect,agree,iagree,shrink,ishrink,revoke]
                                         [--modules upstream,ours] [--repeat 9] [--iterations 20]
                                         [--victim 0] [--breakdown-runs 3] [--bind] [--control]
                                         [--raw FILE.json]
    python bench/ft_primitives/phases.py --modules release,ours   # ours against upstream's newest release

For every repetition, np and operation, one mpirun per module set, the sets interleaved run by run
(their order alternates between repetitions), so that the machine's load hits them alike. Each run
times, at the slowest rank: ITER calls before any failure (their median), the first call after the
victim SIGKILLed itself (one value: it includes the discovery of the failure) and ITER later calls with
the dead rank still a member (their median); the launch and MPI_Init are outside every timing. Module sets
are run.py's, on their prefixes: ``release`` is upstream's newest release (Open MPI 5.0.11 from the Python
registry, tests/harness/ompi_release.py), the program compiled with its mpicc and run with its mpirun; it
has no MPIX_Comm_ishrink, so ishrink is skipped for it (said in a note; its cells print "-"), and no MPI_T
counters of ours, so it has no breakdown runs. Every set runs on the same transports (run.py's TRANSPORTS:
pml ob1, BTLs self, sm, tcp). Printed: the median over the repetitions with its
quartiles, the ratio of the medians to the first module set with a 90 % bootstrap interval (the
repetitions resampled as pairs, since both sets of one repetition ran back to back) and a verdict against
the 1.0 target ("met": ratio <= 1.0; "noise": above 1.0 but the interval reaches below it; "over": the
whole interval above 1.0), and the ratios of the pairs themselves (each repetition's run against the
baseline's run of the same repetition): their median and their min-max;
with --control the baseline also runs a second time as a set of its own, whose
ratio to the baseline (nothing differs but the runs) shows how far this machine moves a ratio by itself; and a
breakdown from MPI_T counters, read in
--breakdown-runs more runs (the timed runs do not open MPI_T: with pvar sessions open, failures were reported
sooner to the upstream module set than to ours, which skewed the first calls)
(our agreements per call, of them Open MPI's internal MAX/MIN allreduces, calls handed to another
agreement module, decisions with MPI_ERR_PROC_FAILED, time in our agreements, time waiting for the
failure to be reported, reliable-broadcast messages per revoke). Load averages are printed before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ftslide.toolchain import mpi  # noqa: E402
from ftslide.errors import FtslideError  # noqa: E402
from ftslide.ui.table import print_table  # noqa: E402
from run import MODULE_SETS, RELEASE, TRANSPORTS, prefixes, programs  # noqa: E402
from harness import ompi_release  # noqa: E402  (tests/ is on the path through run)

SOURCE = Path(__file__).with_name("ft_phases.c")
OPS = ("agree", "iagree", "shrink", "ishrink", "revoke", "detect")
# detect: the failure detection alone (a receive from the victim until MPIX_ERR_PROC_FAILED), the reference
# for the first calls, whose time it dominates.
DEFAULT_OPS = ("detect", "agree", "iagree", "shrink", "ishrink", "revoke")
PHASES = ("before", "first", "later")
# operations upstream's release cannot run, and what it lacks for them
RELEASE_LACKS = {"ishrink": "MPIX_Comm_ishrink (ours: patch ompi/09)"}
# finalize_guard.h: seconds a program gives MPI_Finalize before it ends itself
FINALIZE_GRACE_S = int(re.search(r"#define FINALIZE_GRACE_S (\d+)",
                                 SOURCE.with_name("finalize_guard.h").read_text())[1])
COUNTERS = ("inst", "minmax", "fallbacks", "proc_failed", "agree_us", "detect_us", "rbmsgs")
# --bind: two processes per core, each bound to its core, instead of letting the scheduler place them (which
# process shares the core of a revoke's origin, or of a tree's root, then changes from run to run)
BIND = ["--map-by", "core:OVERSUBSCRIBE", "--bind-to", "core:overload-allowed"]
LINE = re.compile(r"ft_phases op=(\w+) np=(\d+) phase=(\w+) us=([\d.]+) q1=[\d.]+ q3=[\d.]+ "
                  + " ".join(rf"{c}=(-?[\d.]+)" for c in COUNTERS))


def quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) == 1:
        return values[0], values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], statistics.median(values), q[2]


def ratio_interval(base: list[float], other: list[float], level: float = 0.90, resamples: int = 2000,
                   seed: int = 1) -> tuple[float, float]:
    """Bootstrap interval of median(other) / median(base), the repetitions resampled as pairs."""
    pairs = list(zip(base, other))
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        sample = [pairs[rng.randrange(len(pairs))] for _ in pairs]
        denominator = statistics.median(b for b, _ in sample)
        if denominator > 0:
            ratios.append(statistics.median(o for _, o in sample) / denominator)
    if not ratios:
        return float("nan"), float("nan")
    ratios.sort()
    tail = (1 - level) / 2
    return ratios[int(tail * (len(ratios) - 1))], ratios[int((1 - tail) * (len(ratios) - 1))]


def paired_ratios(base: list[float], other: list[float]) -> str:
    """The ratios other / base of the runs of one repetition: their median and min-max."""
    ratios = [o / b for b, o in zip(base, other) if b > 0]
    if not ratios:
        return "-"
    return f"{statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}]"


def verdict(ratio: float, low: float) -> str:
    """The ratio of medians against the 1.0 target, with the interval's lower end."""
    if ratio <= 1.0:
        return "met"
    return "noise" if low <= 1.0 else "over"


def measure(prefix: Path, binary: Path, np: int, op: str, mca: list[str], iterations: int,
            victim: int, counters: bool = False) -> tuple[dict[str, dict[str, float]], bool]:
    """The values of each phase of one run, and whether its MPI_Finalize returned (a finalize that hung
    was ended by the program after FINALIZE_GRACE_S, finalize_guard.h; its values count all the same)."""
    args = [*TRANSPORTS, *mca, *(["-x", "FT_PHASES_COUNTERS=1"] if counters else []), "-np", str(np),
            str(binary), op, str(iterations), str(victim)]
    result = mpi.run(prefix, args, timeout=300)
    got = {}
    for m in LINE.finditer(result.stdout):
        got[m.group(3)] = {"us": float(m.group(4)), **{c: float(v) for c, v in zip(COUNTERS, m.groups()[4:])}}
    if set(got) != set(PHASES):
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        tail = next((line for line in lines if "ft_phases" in line or "MPI_ERR" in line),
                    lines[-1] if lines else "no output")
        raise FtslideError(f"{op} at np {np} with {' '.join(mca) or 'defaults'} on {prefix} failed "
                           f"(exit {result.returncode}): {tail}")
    return got, "ft_phases finalized=1" in result.stdout


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--np", default="4,8,16", help="comma-separated process counts, at least 3 (default 4,8,16)")
    parser.add_argument("--ops", default=",".join(DEFAULT_OPS),
                        help=f"comma-separated operations ({', '.join(OPS)}; default {','.join(DEFAULT_OPS)})")
    parser.add_argument("--modules", default="upstream,ours",
                        help=f"comma-separated module sets, the first is the baseline ({', '.join(MODULE_SETS)})")
    parser.add_argument("--repeat", type=int, default=9, help="runs per np, operation and module set (default 9)")
    parser.add_argument("--iterations", type=int, default=20,
                        help="calls timed before and after the failure in each run (default 20)")
    parser.add_argument("--victim", type=int, default=0, help="rank that is SIGKILLed (default 0, the root of "
                        "fixed trees); the revoke's origin is the next rank")
    parser.add_argument("--breakdown-runs", type=int, default=3,
                        help="extra runs per np, operation and module set with the MPI_T counters read (the timed "
                             "runs go without MPI_T, which changed how soon failures were reported; default 3)")
    parser.add_argument("--bind", action="store_true",
                        help="bind two processes to each core (--map-by core:OVERSUBSCRIBE --bind-to "
                             "core:overload-allowed) instead of leaving their placement to the scheduler")
    parser.add_argument("--control", action="store_true",
                        help="also run the baseline set a second time as a set of its own (named BASELINE-again), "
                             "interleaved like the others: its ratio to the baseline is what this machine and "
                             "harness read when nothing differs")
    parser.add_argument("--raw", type=Path, help="also write every run's values to this JSON file")
    args = parser.parse_args()
    try:
        counts = [int(n) for n in args.np.split(",")]
        if any(n < 3 for n in counts):
            raise ValueError
    except ValueError:
        print(f"phases.py: error: --np takes process counts of at least 3, e.g. 4,8,16 (got {args.np!r})",
              file=sys.stderr)
        return 2
    ops = args.ops.split(",")
    bad = [o for o in ops if o not in OPS]
    if bad:
        print(f"phases.py: error: unknown operation {bad[0]!r}: choose from {', '.join(OPS)}", file=sys.stderr)
        return 2
    sets = args.modules.split(",")
    unknown = [name for name in sets if name not in MODULE_SETS]
    if unknown:
        print(f"phases.py: error: unknown module set {unknown[0]!r}: choose from {', '.join(MODULE_SETS)}",
              file=sys.stderr)
        return 2
    if len(set(sets)) != len(sets):
        print(f"phases.py: error: a module set is named twice in {args.modules!r}", file=sys.stderr)
        return 2
    kind_of = {name: name for name in sets}  # the module set a set runs (the control set: the baseline's)
    if args.control:
        sets.append(f"{sets[0]}-again")
        kind_of[sets[-1]] = sets[0]
    mca_of = {name: MODULE_SETS[kind] for name, kind in kind_of.items()}

    def runs_op(name: str, op: str) -> bool:
        return not (kind_of[name] == RELEASE and op in RELEASE_LACKS)
    if args.repeat < 1 or args.iterations < 1 or args.breakdown_runs < 0:
        print("phases.py: error: --repeat and --iterations take counts of at least 1, --breakdown-runs of at least 0",
              file=sys.stderr)
        return 2
    if any(not 0 <= args.victim < n for n in counts):
        print(f"phases.py: error: --victim must be a rank of every np (got {args.victim})", file=sys.stderr)
        return 2
    placement = BIND if args.bind else []
    notes = [f"{name}: {op} skipped, upstream's release has no {RELEASE_LACKS[op]}"
             for name in sets for op in ops if not runs_op(name, op)]
    for note in notes:
        print(f"phases.py: {note}", file=sys.stderr, flush=True)
    start_load = load()
    try:
        kinds = list(dict.fromkeys(kind_of.values()))
        prefix_of = {name: p for kind, p in prefixes(kinds).items() for name in sets if kind_of[name] == kind}
        binary_of = programs(SOURCE, prefix_of)

        finalize_hangs = {name: [0, 0] for name in sets}  # runs whose MPI_Finalize hung, runs

        def sweep(repeat: int, counters: bool) -> dict[tuple[int, str, str], list[dict[str, dict[str, float]]]]:
            """repeat runs of every np, operation and set, the sets' order alternating between repetitions"""
            got: dict[tuple[int, str, str], list[dict[str, dict[str, float]]]] = {}
            for rep in range(repeat):
                order = sets if rep % 2 == 0 else list(reversed(sets))
                for np in counts:
                    for op in ops:
                        for name in order:
                            # the release has none of our MPI_T counters: no breakdown runs for it
                            if not runs_op(name, op) or (counters and kind_of[name] == RELEASE):
                                continue
                            values, finalized = measure(prefix_of[name], binary_of[name], np, op,
                                                        [*placement, *mca_of[name]], args.iterations,
                                                        args.victim, counters=counters)
                            got.setdefault((np, op, name), []).append(values)
                            finalize_hangs[name][0] += not finalized
                            finalize_hangs[name][1] += 1
                            if not finalized:
                                print(f"  {op} np {np} {name}: MPI_Finalize hung, ended after "
                                      f"{FINALIZE_GRACE_S} s", file=sys.stderr, flush=True)
                if not counters:
                    print(f"repetition {rep + 1}/{repeat} done (load {load()})", file=sys.stderr, flush=True)
            return got

        runs = sweep(args.repeat, counters=False)
        counted = sweep(args.breakdown_runs, counters=True)
    except FtslideError as exc:
        print(f"phases.py: error: {exc}", file=sys.stderr)
        return 1
    end_load = load()
    if args.raw:
        args.raw.write_text(json.dumps({"timed": {f"{np} {op} {name}": v for (np, op, name), v in runs.items()},
                                        "counters": {f"{np} {op} {name}": v for (np, op, name), v in
                                                     counted.items()}}, indent=1))
    rows, breakdown = [], []
    for np in counts:
        for op in ops:
            for phase in PHASES:
                base_values = [r[phase]["us"] for r in runs.get((np, op, sets[0]), [])]
                base = statistics.median(base_values) if base_values else None
                row = [np, op, phase]
                for name in sets:
                    values = [r[phase]["us"] for r in runs.get((np, op, name), [])]
                    if not values:  # an operation the set cannot run (RELEASE_LACKS)
                        row += ["-"] if name == sets[0] else ["-"] * 5
                        continue
                    q1, med, q3 = quartiles(values)
                    row += [f"{med:.1f} [{q1:.1f}-{q3:.1f}]"]
                    if name != sets[0] and not base:
                        row += ["-"] * 4
                    elif name != sets[0]:
                        ratio = med / base
                        low, high = ratio_interval(base_values, values)
                        row += [f"{ratio:.2f}x", f"{low:.2f}-{high:.2f}", verdict(ratio, low),
                                paired_ratios(base_values, values)]
                    with_counters = counted.get((np, op, name))
                    if not with_counters:
                        continue
                    counters = {c: statistics.median(r[phase][c] for r in with_counters) for c in COUNTERS}
                    breakdown.append([np, op, phase, name, *(("-" if counters[c] < 0 else
                                                              f"{counters[c]:.1f}") for c in COUNTERS)])
                rows.append(row)
    header = ["np", "op", "phase", f"{sets[0]} us [q1-q3]"]
    for name in sets[1:]:
        header += [f"{name} us [q1-q3]", f"{name}/{sets[0]}", "90% interval", "vs 1.0", "pairs: median [min-max]"]
    print_table(header, rows)
    print(f"slowest rank per call, launch and MPI_Init excluded; before/later: median of {args.iterations} calls "
          f"per run; first: one call per run; medians and quartiles over {args.repeat} runs, module sets "
          f"interleaved (order alternating); pairs: the ratios of the {args.repeat} runs to the baseline's run of "
          f"the same repetition; victim rank {args.victim}; np oversubscribed on {os.cpu_count()} cores"
          f"{', two processes bound to each core' if args.bind else ''}; every set on pml ob1 with the self, sm "
          f"and tcp BTLs; load average {start_load} at the start, {end_load} at the end")
    if RELEASE in kind_of.values():
        print(f"{RELEASE}: upstream's Open MPI {ompi_release.VERSION} from the Python registry "
              f"({prefix_of[next(n for n in sets if kind_of[n] == RELEASE)]}), its own agreement and revoke")
    for note in notes:
        print(note)
    for name, (hung, total) in finalize_hangs.items():
        if hung:
            print(f"{name}: MPI_Finalize hung in {hung} of {total} runs (its measurements were printed before; the "
                  f"program ended it after {FINALIZE_GRACE_S} s: upstream's final fence over the whole job, dead "
                  "rank included; our patch ompi/01 fences with the survivors)")
    print()
    print_table(["np", "op", "phase", "modules", "our agreements/call", "of them MAX/MIN", "handed on/call",
                 "PROC_FAILED/call", "in our agreement us", "failure wait us", "rbcast msgs/call"], breakdown)
    print(f"per call, max over ranks (rbcast msgs: sum over ranks), median over {args.breakdown_runs} more runs "
          "with the MPI_T counters read; '-': counter absent (module set without coll/ftera)"
          + ("; none for the release, which has none of these counters" if RELEASE in kind_of.values() else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
