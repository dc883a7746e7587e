#!/usr/bin/env python3
"""Recovery time of the sliding runtime, broken down by phase, at np 9 to 16 (oversubscribed).

    python bench/sliding_recovery/run.py [--repeat 3] [--methods simple,slide1d,slide2d,hybrid]

Each configuration runs the 3D Jacobi example (sliding/examples/jacobi3d.c)
with node 1 SIGKILLed at iteration 12 and prints the median over --repeat runs
of each phase of the recovery, as logical rank 0 measured it: agree (revoke +
shrink), map (the sliding core), rebuild (split + Cartesian communicator),
state (moving checkpoints and re-establishing buddies), commit (the final
agreement), total; plus each method's total relative to simple.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ftslide.sliding import core as sc  # noqa: E402
from ftslide.sliding import runtime as stencil  # noqa: E402
from ftslide.errors import FtslideError  # noqa: E402
from ftslide.toolchain.ompi import require_prefix  # noqa: E402
from ftslide.ui.table import print_table  # noqa: E402

# node grids (spares included) with 9 to 16 processes; spares: one plane along x
GRIDS = ("torus:3x3x1", "torus:3x2x2", "torus:5x3x1", "torus:4x2x2")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per configuration (median)")
    parser.add_argument("--methods", help="comma-separated methods; the first is the baseline of the last "
                        "column (default simple,slide1d,slide2d,hybrid)")
    args = parser.parse_args()
    m = sc.Method
    methods = args.methods.split(",") if args.methods else [x.label for x in (m.SIMPLE, m.SLIDE1D, m.SLIDE2D, m.HYBRID)]
    try:
        prefix = require_prefix()
        program = stencil.build(prefix)
        rows, phases = [], []
        for grid in GRIDS:
            first_total = None
            for method in methods:
                nodes = stencil.node_count(grid, "x:1", method)
                samples = []
                for _ in range(max(1, args.repeat)):
                    run = stencil.run(prefix, grid, "x:1", method, [(1, stencil.iteration_point(12))], program=program,
                                      timeout=180)
                    if run.returncode != 0 or len(run.recoveries) != 1:
                        raise FtslideError(f"{grid} {method}: run failed (exit {run.returncode}): "
                                           f"{'; '.join(map(str, run.errors)) or run.stderr.strip()[-200:]}")
                    samples.append(run.recoveries[0].times)
                phases = list(samples[0])  # agree ... total, as the program reports them
                median = {p: statistics.median(s[p] for s in samples) for p in phases}
                first_total = first_total or median["total"]
                rows.append([nodes, grid, method, *(f"{median[p]:.2f}" for p in phases),
                             f"{median['total'] / first_total:.2f}x"])
                print(f"{grid} {method}: done", file=sys.stderr, flush=True)
    except FtslideError as exc:
        print(f"run.py: error: {exc}", file=sys.stderr)
        return 1
    print_table(["np", "grid", "method", *(f"{p} ms" for p in phases), f"total vs {methods[0]}"], rows)
    print(f"node 1 killed at iteration 12; median of {args.repeat} runs; {os.cpu_count()} cores, oversubscribed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
