#!/usr/bin/env python3
"""The campaign of ULFM programs written the way users write them, ours against upstream's modules.

    python bench/ulfm_patterns/campaign.py [--patterns ring,master-worker,...] [--np 4,6,8] [--runs 20]
        [--modules ours,upstream] [--where node,cluster] [--seed 1] [--timeout 60] [--json out.json]
    python bench/ulfm_patterns/campaign.py --report node.json cluster.json [rerun.json ...]

Every cell (pattern x np x place x module set) runs ``--runs`` times; run k of a cell kills the
ranks seed ``seed + k`` names (tests/harness/ulfm_patterns.py, ``plan``), the same kills for both
module sets, which run one after the other so that both meet the same machine. ``cluster`` is a
4-node emulated cluster (2 slots a node, TCP between network namespaces in 198.18.0.0/15) that the
campaign creates and removes. The table gives, per cell and module set, the runs, hangs, wrong
results, errors and the median time of a run (mpirun start to end), and ours / upstream as the
ratio of the medians, and per pattern the median of the per-run ratios (each run against the same run
with the other set); the JSON has every run, with the stacks of hung ones. Exit status 1 when a
run with our modules hung, went wrong or failed. A campaign stopped by ^C or SIGTERM reports the runs
it finished (and writes them to --json) and exits 130. ``--report`` runs nothing: it prints the
tables of saved campaigns, a run of a later file replacing the same run (place, pattern, np, seed,
module set) of an earlier one, e.g. a pattern run again after a fix.
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
from harness.ulfm_patterns import MODULE_SETS, PATTERNS, Outcome, build, run_pattern  # noqa: E402

VERDICTS = ("ok", "wrong", "hang", "error")


def cell_summary(outcomes: list[Outcome]) -> dict[str, float | int]:
    count = {verdict: sum(o.verdict == verdict for o in outcomes) for verdict in VERDICTS}
    finished = [o.seconds for o in outcomes if o.verdict in ("ok", "wrong")]
    return {"runs": len(outcomes), **count, "median_s": statistics.median(finished) if finished else float("nan")}


def interrupted(signum: int, frame: object) -> None:
    """A SIGTERM ends the campaign as ^C does: the emulated cluster is removed on the way out."""
    raise KeyboardInterrupt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patterns", default=",".join(PATTERNS), help="comma-separated pattern names (default: all)")
    parser.add_argument("--np", default="4,6,8", help="comma-separated process counts (default 4,6,8)")
    parser.add_argument("--runs", type=int, default=20, help="runs per cell, each with its own seed (default 20)")
    parser.add_argument("--modules", default="ours,upstream", help="module sets to compare (default ours,upstream)")
    parser.add_argument("--where", default="node,cluster", help="node (one machine) and/or cluster (4 emulated nodes)")
    parser.add_argument("--seed", type=int, default=1, help="first seed of each cell (default 1)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds before a run counts as a hang (default 60)")
    parser.add_argument("--json", type=Path, help="also write every outcome to this file")
    parser.add_argument("--report", type=Path, nargs="+", metavar="JSON",
                        help="print the tables of saved campaigns (--json files) instead of running")
    args = parser.parse_args()
    if args.report:
        try:
            outcomes = load_runs(args.report)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"campaign.py: error: cannot read the campaign files: {exc}", file=sys.stderr)
            return 2
        report(outcomes, None)
        return 0
    try:
        patterns = [PATTERNS[name] for name in args.patterns.split(",")]
        modules = args.modules.split(",")
        wheres = args.where.split(",")
        nps = [int(n) for n in args.np.split(",")]
        if any(m not in MODULE_SETS for m in modules) or any(w not in ("node", "cluster") for w in wheres):
            raise KeyError(args.modules + " " + args.where)
        if min(nps) < 3 or args.runs < 1:
            raise ValueError
    except (KeyError, ValueError) as exc:
        print(f"campaign.py: error: bad --patterns/--modules/--where/--np/--runs ({exc}); patterns: "
              f"{','.join(PATTERNS)}; modules: {','.join(MODULE_SETS)}; where: node,cluster", file=sys.stderr)
        return 2
    try:
        prefix = require_prefix()
        binaries = {p.name: build(prefix, p) for p in patterns}
    except FtslideError as exc:
        print(f"campaign.py: error: {exc}", file=sys.stderr)
        return 2

    signal.signal(signal.SIGTERM, interrupted)
    outcomes: list[Outcome] = []
    cluster = None
    started = time.monotonic()
    total = len(patterns) * len(nps) * len(wheres) * len(modules) * args.runs
    try:
        for where in wheres:
            launch = {}
            if where == "cluster":
                cluster = netcluster.up(f"u{uuid.uuid4().hex[:6]}", nodes=4, slots=2)
                launch = {"cluster": cluster, "wrap": lambda argv: netcluster.job_argv(cluster, argv),
                          "env": netcluster.launch_environment()}
            for pattern in patterns:
                for np in nps:
                    for k in range(args.runs):
                        for module_set in modules:
                            outcome = run_pattern(prefix, binaries[pattern.name], pattern, np, args.seed + k,
                                                  module_set, timeout=args.timeout, **launch)
                            outcome.where = where
                            outcomes.append(outcome)
                            if not outcome.ok:
                                print(f"  {where} {pattern.name} np {np} seed {args.seed + k} {module_set}: "
                                      f"{outcome.verdict}: {outcome.detail} (kills {outcome.kills})",
                                      file=sys.stderr, flush=True)
                    done = len(outcomes)
                    print(f"[{done}/{total}, {time.monotonic() - started:.0f} s] {where} {pattern.name} np {np}",
                          file=sys.stderr, flush=True)
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
    print(f"{len(outcomes)} runs in {time.monotonic() - started:.0f} s")
    if stopped:
        return 130
    return 1 if any(o.modules == "ours" and not o.ok for o in outcomes) else 0


def load_runs(paths: list[Path]) -> list[Outcome]:
    """The runs of saved campaigns; a later file's run replaces the same run of an earlier file."""
    runs: dict[tuple, Outcome] = {}
    for path in paths:
        for run in json.loads(path.read_text())["runs"]:
            outcome = Outcome(**{**run, "kills": {int(k): v for k, v in run["kills"].items()},
                                 "landed": {int(k): v for k, v in run["landed"].items()}})
            runs[(outcome.where, outcome.pattern, outcome.np, outcome.seed, outcome.modules)] = outcome
    return list(runs.values())


def report(outcomes: list[Outcome], json_path: Path | None) -> None:
    """The tables of a campaign (cells in the order of PATTERNS) and, with ``json_path``, its runs."""
    def present(key, order):
        seen = {getattr(o, key) for o in outcomes}
        return [item for item in order if item in seen]
    wheres = present("where", ["node", "cluster"])
    patterns = [PATTERNS[name] for name in present("pattern", list(PATTERNS))]
    nps = sorted({o.np for o in outcomes})
    modules = present("modules", list(MODULE_SETS))
    rows, cells = [], []
    for where in wheres:
        for pattern in patterns:
            for np in nps:
                if not any((o.where, o.pattern, o.np) == (where, pattern.name, np) for o in outcomes):
                    continue
                summary = {m: cell_summary([o for o in outcomes if (o.where, o.pattern, o.np, o.modules)
                                            == (where, pattern.name, np, m)]) for m in modules}
                cells.append({"where": where, "pattern": pattern.name, "np": np, **summary})
                row = [where, pattern.name, np]
                for m in modules:
                    s = summary[m]
                    row += [f"{s['ok']}/{s['runs']}", s["hang"], s["wrong"] + s["error"], f"{s['median_s']:.2f}"]
                if len(modules) == 2:
                    a, b = summary[modules[0]]["median_s"], summary[modules[1]]["median_s"]
                    row.append(f"{a / b:.2f}" if b == b and a == a and b > 0 else "-")
                rows.append(row)
    header = ["where", "pattern", "np"]
    for m in modules:
        header += [f"{m} ok", "hang", "wrong", "median s"]
    if len(modules) == 2:
        header.append(f"{modules[0]}/{modules[1]}")
    print_table(header, rows)
    if len(modules) == 2:
        # per pattern: the ratio of each run's time with the first set to the same run (same seed, np and
        # place, run right after) with the second, pooled over np and places: the median and the quartiles
        pair_rows = []
        for pattern in patterns:
            first = {(o.where, o.np, o.seed): o for o in outcomes if o.pattern == pattern.name
                     and o.modules == modules[0] and o.verdict in ("ok", "wrong")}
            ratios = sorted(first[(o.where, o.np, o.seed)].seconds / o.seconds for o in outcomes
                            if o.pattern == pattern.name and o.modules == modules[1] and o.verdict in ("ok", "wrong")
                            and (o.where, o.np, o.seed) in first and o.seconds > 0)
            if ratios:
                q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
                pair_rows.append([pattern.name, len(ratios), f"{q[1]:.2f}", f"{q[0]:.2f}-{q[2]:.2f}"])
        print()
        print_table(["pattern", "pairs", f"{modules[0]}/{modules[1]} per run, median", "quartiles"], pair_rows)
    for m in modules:
        mine = [o for o in outcomes if o.modules == m]
        print(f"{m}: {len(mine)} runs, {sum(o.verdict == 'hang' for o in mine)} hangs, "
              f"{sum(o.verdict == 'wrong' for o in mine)} wrong, {sum(o.verdict == 'error' for o in mine)} errors, "
              f"{sum(len(o.landed) for o in mine)} of {sum(len(o.kills) for o in mine)} planned kills landed")
    if json_path:
        json_path.write_text(json.dumps({"cells": cells, "runs": [asdict(o) for o in outcomes]}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
