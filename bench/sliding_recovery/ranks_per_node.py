#!/usr/bin/env python3
"""Recovery with K processes per node: the demo's run at K = 1, 2, 4 side by side in one run.

    python bench/sliding_recovery/ranks_per_node.py [--repeat 5] [--ks 1,2,4] [--method hybrid] [--same-np]

Each repeat runs, for every K in turn (interleaved, so that a slow spell of the shared machine hits
all of them), the resilient Jacobi example on the demo's layout (torus:3x2x2, spares x:1: 12 nodes,
K x 12 processes, every K consecutive processes a node) failure-free and with nodes 1 and 6 killed
whole at iterations 12 and 23 (`ftslide demo --ranks-per-node K`). Printed per K: whether every
faulty run's checksum equals the failure-free one bit for bit, the median over the repeats of each
recovery step and of the total per node failure (as logical rank 0 measured them), the state bytes
moved node to node and sent to re-establish the buddy copies per recovery, and the total's ratio to
K = 1 (target: <= 3 at K = 4). --same-np adds, for every K > 1, one process per node on a grid of
K x 12 nodes (torus:4x3x2 for K = 2, torus:4x4x3 for K = 4, spares x:1): as many processes as K on
the demo's grid, to tell the cost of K from the cost of processes on few cores, and the ratio of
each K to its control. Not a timed test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ftslide.errors import FtslideError  # noqa: E402
from ftslide.sliding import runtime as stencil  # noqa: E402
from ftslide.toolchain.ompi import require_prefix  # noqa: E402
from ftslide.ui.table import print_table  # noqa: E402

GRID, SPARES = "torus:3x2x2", "x:1"
KILLS = [(1, "iter=12"), (6, "iter=23")]
# One process per node on K x 12 nodes; the second victim holds a rank on another line of x than node 1
# (hybrid slides node 1's line first): 8 = (1,1,0) of 4x3x2, 17 = (1,1,2) of 4x4x3.
SAME_NP = {2: ("torus:4x3x2", [(1, "iter=12"), (8, "iter=23")]),
           4: ("torus:4x4x3", [(1, "iter=12"), (17, "iter=23")])}


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each K (median)")
    parser.add_argument("--ks", default="1,2,4", help="processes per node to compare; the first is the baseline")
    parser.add_argument("--method", default="hybrid")
    parser.add_argument("--same-np", action="store_true",
                        help="also one process per node on K x 12 nodes, for every K > 1 (K = 2 and 4 only)")
    args = parser.parse_args()
    ks = [int(k) for k in args.ks.split(",")]
    if args.same_np and any(k not in SAME_NP for k in ks if k > 1):
        parser.error(f"--same-np has control grids for K = {', '.join(map(str, SAME_NP))} only")
    configs = [(f"K={k}", GRID, KILLS, stencil.node_options(GRID, SPARES, k)) for k in ks]
    controls = {f"K={k}": f"K=1, {12 * k} nodes" for k in ks if k > 1 and args.same_np}
    configs += [(controls[f"K={k}"], *SAME_NP[k], stencil.NodeOptions()) for k in ks if f"K={k}" in controls]
    print(f"load average at the start {load()}", flush=True)
    try:
        prefix = require_prefix()
        program = stencil.build(prefix)
        samples: dict[str, list] = {label: [] for label, *_ in configs}
        same: dict[str, bool] = {label: True for label, *_ in configs}
        for r in range(args.repeat):
            for label, grid, kills, nodes_as in configs:
                common = dict(program=program, timeout=300, nodes_as=nodes_as)
                base = stencil.run(prefix, grid, SPARES, args.method, **common)
                run = stencil.run(prefix, grid, SPARES, args.method, kills, **common)
                if run.returncode != 0 or len(run.recoveries) != len(kills) or not base.checksum:
                    raise FtslideError(f"{label}: run failed (exit {run.returncode}): "
                                       f"{'; '.join(map(str, run.errors)) or run.stderr.strip()[-300:]}")
                same[label] &= run.checksum == base.checksum
                samples[label].extend(run.recoveries)
                print(f"repeat {r + 1} {label}: totals {[round(x.times['total'], 1) for x in run.recoveries]} ms, "
                      f"load {load()}", file=sys.stderr, flush=True)
    except FtslideError as exc:
        print(f"ranks_per_node.py: error: {exc}", file=sys.stderr)
        return 1
    phases = list(samples[configs[0][0]][0].times)  # agree ... total, as the program reports them
    rows, first = [], None
    for label, grid, _kills, nodes_as in configs:
        recs = samples[label]
        median = {p: statistics.median(x.times[p] for x in recs) for p in phases}
        first = first or median["total"]
        moved = statistics.median(x.moved_bytes for x in recs)
        buddy = statistics.median(x.buddy_bytes for x in recs)
        control = controls.get(label)
        rows.append([label, grid, nodes_as.ranks_per_node * stencil.node_count(grid, SPARES, args.method),
                     "yes" if same[label] else "NO", *(f"{median[p]:.2f}" for p in phases),
                     f"{moved / 1024:.1f}", f"{buddy / 1024:.1f}", f"{median['total'] / first:.2f}",
                     f"{median['total'] / statistics.median(x.times['total'] for x in samples[control]):.2f}"
                     if control else ""])
    print_table(["run", "grid", "processes", "checksum = failure-free", *(f"{p} ms" for p in phases),
                 "moved KiB", "buddy KiB", f"total / {configs[0][0]}", "total / same np, K=1"], rows)
    print(f"{args.method}, nodes 1 and 6 killed whole at iterations 12 and 23; median over {args.repeat} runs x "
          f"2 recoveries; {os.cpu_count()} cores, oversubscribed; load average at the end {load()}")
    return 0 if all(same.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
