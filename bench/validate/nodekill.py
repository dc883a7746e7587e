#!/usr/bin/env python3
"""End to end: the sliding runtime recovers from a real whole-node kill on the emulated 3D torus, and the
iterations after the recovery are timed beside SimGrid's prediction for the map it recovered to.

    python bench/validate/nodekill.py [--topology torus:3x3x3] [--spares x:1] [--method hybrid]
                                      [--rate 1mbit] [--n 64] [--iterations 8] [--kill-after 4] [--seed 1]

1. `ftslide cluster up` of the topology (links shaped to --rate, one slot per node: world rank K runs
   on node K), removed at the end whatever happens.
2. sliding/examples/jacobi3d.c on every node (spares included), JACOBI3D_TIMES=1: logical rank 0
   prints when each iteration is done. No checkpoint before the kill: the recovery restarts from
   the initial values, so what is timed afterwards is the new map's halo exchange alone.
3. Once iteration --kill-after is done, every process of one worker node (drawn with --seed, never
   node 0 where mpirun runs) is SIGKILLed at once: its rank, its PRRTE daemon (a power loss).
4. The survivors agree, the spare slides in (--method), the run restarts and ends with a checksum.
5. Measured slowdown: median iteration period after the recovery (from the 2nd iteration on) / median
   period before the kill (from the 2nd on). Predicted: SimGrid's time of the same exchange (the
   kernel's sendrecv pattern: jacobi3d's MPI_Sendrecv per dimension and direction, halo N*N doubles)
   for the recovered map / the initial map, on the platform of the same topology and rate.
Needs root. Printed, not a timed test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))  # the node-loss harness

from ftslide.toolchain.ompi import require_prefix  # noqa: E402
from ftslide.errors import FtslideError  # noqa: E402
from ftslide.jobmgr import cluster as netcluster  # noqa: E402
from ftslide.simulation import smpi  # noqa: E402
from ftslide import validate  # noqa: E402
from ftslide.simulation.placement import make_placement  # noqa: E402
from ftslide.simulation.platform import hostfile, platform_xml  # noqa: E402
from ftslide.simulation.sweep import draw_failures  # noqa: E402
from ftslide.sliding import core as sc  # noqa: E402
from ftslide.sliding import runtime  # noqa: E402
from ftslide.sliding.topology import parse_topology  # noqa: E402
from harness import nodeloss  # noqa: E402



def periods(lines: list[tuple[int, float]]) -> list[float]:
    """Periods between consecutive iterations, from the 2nd iteration on (the 1st opens connections)."""
    return [b[1] - a[1] for a, b in zip(lines, lines[1:]) if a[0] >= 1 and b[0] == a[0] + 1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", default="torus:3x3x3")
    ap.add_argument("--spares", default="x:1")
    ap.add_argument("--method", help="substitution method (default hybrid)")
    ap.add_argument("--rate", default="1mbit")
    ap.add_argument("--n", type=int, default=64, help="points per rank and dimension (halo n*n doubles)")
    ap.add_argument("--iterations", type=int, default=8)
    ap.add_argument("--kill-after", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    args.method = args.method or sc.Method.HYBRID.label
    topo = parse_topology(args.topology)
    placement = make_placement(topo, None, args.spares)
    layout = placement.layout
    workers = set(layout.initial_map())
    victim = next(n for seed in range(args.seed, args.seed + 100)
                  for n in draw_failures(placement, 1, 1, seed)[0] if n != 0 and n in workers)
    halo = args.n * args.n * 8
    net = validate.link_params(args.rate, None)
    recovered = placement.hosts(sc.compute_map(layout, args.method, [victim]))
    predicted = {}
    for label, hosts in (("before", placement.initial_hosts()), ("after", recovered)):
        run = smpi.KernelRun(platform_xml(topo, net), hostfile(hosts), placement.stencil_dims(),
                             placement.stencil_periodic, (f"sendrecv:{halo}",), 3, net)
        predicted[label] = smpi.run_kernels(run)["sendrecv"]
    prefix = require_prefix()
    (binary,) = runtime.build(prefix)
    name = f"nk{uuid.uuid4().hex[:6]}"
    load0 = os.getloadavg()[0]
    cluster = netcluster.up(name, None, str(topo), args.rate, 1, None, topo.order)
    try:
        every = args.iterations + args.kill_after + 1  # no checkpoint
        result = nodeloss.run(
            name, binary, layout.nodes,
            [str(layout.grid), str(layout.spares), args.method, str(args.n), str(args.iterations), str(every)],
            [victim], trigger=f"jacobi3d: iteration number={args.kill_after} ",
            mpirun_options=("-x", "JACOBI3D_TIMES=1", "--mca", "mpi_yield_when_idle", "1",
                            *validate.eager_options(halo)),
            timeout=args.timeout)
    finally:
        netcluster.teardown(cluster)
    out = result.stdout
    parsed = runtime.parse(result.returncode if result.returncode is not None else -9, out, result.stderr)
    before: list[tuple[int, float]] = []
    after: list[tuple[int, float]] = []
    times = before
    for event, f in runtime.events(out):  # iteration times, before and after the first recovery
        if event == "recovered":
            times = after
        elif event == "iteration":
            times.append((int(f["number"]), float(f["time"])))
    print(f"{topo} spares {layout.spares}, {args.method}, jacobi3d n={args.n} (halo {halo} B), links {args.rate}; "
          f"killed node {victim} after iteration {args.kill_after}; load {load0:.1f} -> {os.getloadavg()[0]:.1f}")
    print(f"job exit {result.returncode}, checksum {parsed.checksum}, recoveries "
          f"{[(r.failed, r.times['total']) for r in parsed.recoveries]}")
    if not parsed.recoveries or len(after) < 3 or len(before) < 3:
        print("no recovery timed: " + "".join(result.stderr.splitlines(True)[-5:]))
        return 1
    pre, post = periods(before), periods(after)
    measured = statistics.median(post) / statistics.median(pre)
    pred = predicted["after"] / predicted["before"]
    print(f"iteration period before: median {statistics.median(pre):.3f} s ({min(pre):.3f}-{max(pre):.3f}, "
          f"{len(pre)}); SimGrid {predicted['before']:.3f} s")
    print(f"iteration period after recovery: median {statistics.median(post):.3f} s ({min(post):.3f}-"
          f"{max(post):.3f}, {len(post)}); SimGrid {predicted['after']:.3f} s")
    print(f"slowdown: measured {measured:.3f}, SimGrid {pred:.3f}, error {(pred - measured) / measured * 100:+.1f} %")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except FtslideError as exc:
        print(f"bench/validate/nodekill: {exc}", file=sys.stderr)
        sys.exit(1)
