#!/usr/bin/env python3
"""Cost of ftslide simulate: the k preset sweep on SimGrid and the analytic model at 12x12x12.

    python bench/simulate/run.py [--skip-sweep] [--jobs N]

1. The analytic congestion model for one placement of the k preset
   (torus:12x12x12, spares x:1, 1584 ranks), per pattern, the first call and a
   second one, against the 2 s target.
2. The whole k preset sweep (5 methods x 9 failure counts x 3 patterns x 5
   trials) with an empty simulation cache, against the 15 minute target.
   It prints the stencil7 slowdown table of the sweep too.

Printed, not a timed test: the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ftslide.sliding import core as sc
from ftslide.errors import FtslideError
from ftslide.simulation import analytic
from ftslide.simulation.network import PRESETS
from ftslide.simulation.placement import make_placement
from ftslide.simulation.sweep import SweepConfig, run_sweep
from ftslide.ui.table import print_table
from ftslide.sliding.topology import parse_topology


def model_times() -> None:
    preset = PRESETS["k"]
    topo = parse_topology(preset.topology)
    pl = make_placement(topo, preset.grid, preset.spares)
    failed = sorted(pl.layout.initial_map())[::197][:8]
    simple = sc.Method.SIMPLE.label
    hosts = pl.hosts(sc.compute_map(pl.layout, simple, failed))
    sizes = {"stencil": 65536, "phased": 65536, "barrier": 0, "allreduce": 8}
    rows = []
    for pattern in sizes:
        cost = []
        for _ in range(2):  # first call, then again
            t0 = time.perf_counter()
            c = analytic.pattern_congestion(pl.layout, hosts, pattern, sizes[pattern], preset.net)
            cost.append(time.perf_counter() - t0)
        rows.append([pattern, c.messages, c.load_max, c.hops_max, f"{cost[0]:.3f}",
                     f"{cost[1]:.3f}", f"{cost[0] / 2.0:.2f}"])
    print(f"analytic model, k preset (torus:12x12x12, x:1, 1584 ranks, {simple} after 8 failures):")
    print_table(["pattern", "messages", "load max", "hops max", "first s", "second s",
                 "first / 2 s target"], rows)


def sweep(jobs: int) -> None:
    preset = PRESETS["k"]
    cfg = SweepConfig(topology=preset.topology, grid=preset.grid, spares=preset.spares,
                      methods=tuple(m.label for m in sc.methods() if m.one_rank_per_node),
                      failures=tuple(range(9)), patterns=("stencil7", "barrier", "allreduce"),
                      trials=5, seed=1, net=preset.net, jobs=jobs)
    with tempfile.TemporaryDirectory(prefix="ftsim-bench-") as cache:
        os.environ["FTSLIDE_CACHE"] = cache
        t0 = time.monotonic()
        summary, _ = run_sweep(cfg)
        elapsed = time.monotonic() - t0
    rows = summary["rows"]
    assert isinstance(rows, list)
    print(f"\nk preset sweep: {summary['simulations']} distinct simulations of 1584 ranks, "
          f"{elapsed:.0f} s on {jobs or os.cpu_count()} workers = "
          f"{elapsed / 900:.2f} x the 15 min target")
    table = [[r["method"], r["failures"], r["slowdown_median"] or "-", r["slowdown_min"] or "-",
              r["slowdown_max"] or "-", r["load_max_median"] or "-"]
             for r in rows if r["pattern"] == "stencil7"]
    print_table(["method", "failures", "stencil7 slowdown", "min", "max", "load max"], table)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-sweep", action="store_true")
    parser.add_argument("--jobs", type=int, default=0, help="parallel smpirun (default: cores)")
    args = parser.parse_args()
    try:
        model_times()
        if not args.skip_sweep:
            sweep(args.jobs)
    except FtslideError as exc:
        print(f"bench/simulate: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
