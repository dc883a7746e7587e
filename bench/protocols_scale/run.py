#!/usr/bin/env python3
"""Scale benchmark of the SimGrid protocol driver (see README.md).

Two tables, each run side by side in one invocation:

* scale: for each protocol and failure count F at P = 65,536 (or the largest
  power of two whose memory estimate fits), on the auto-sized torus, the wall
  time and peak memory of one simulated operation (one SimGrid actor per
  process) and its simulated latency, held against the targets (60 s, 4 GiB).
  Agreement failures are discovered during the operation (the current root
  dies as it decides, F times); broadcast failures are F random ranks dying
  within the failure-free latency.
* ratios (``--ratios``): failure-free latency of the agreement, early and
  uniform mode, for each tree and order, against a binomial-tree allreduce of
  one int on the same platform, for every P and topology.

Simulated latencies are deterministic; wall times depend on the machine's load.

    .venv/bin/python bench/protocols_scale/run.py [--p 65536] [--failures 0,8] [--protos era,era-early,bmg-lean]
                                                  [--tree knomial4] [--order torus] [--fraction 0.3]
    .venv/bin/python bench/protocols_scale/run.py --ratios [--ratio-p 1024,4096,16384,65536]
                                                  [--topologies torus,fattree]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from ftslide.simulation import protocols as ps  # noqa: E402
from ftslide.errors import FtslideError  # noqa: E402
from ftslide.ui.table import print_table  # noqa: E402

WALL_TARGET_S = 60.0
MEMORY_TARGET_GB = 4 * 2**30 / 1e9
# (tree, order) pairs of the ratio table; the torus order only on a torus.
SHAPES = (("binomial", "rank"), ("knomial4", "rank"), ("binomial", "torus"), ("knomial4", "torus"))


class Platforms:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.made: dict[tuple[str, int], tuple[Path, object]] = {}

    def get(self, kind: str, p: int):
        if (kind, p) not in self.made:
            topo = ps.topology_for(kind, p)
            self.made[kind, p] = (ps.write_platform(topo, self.tmp / f"{kind}-{p}.xml"), topo)
        return self.made[kind, p]


def load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def scale(args: argparse.Namespace, plats: Platforms) -> None:
    budget = ps.available_memory() * args.fraction
    fs = ps.parse_failures(args.failures)
    load0 = load()
    rows = []
    for proto in args.protos.split(","):
        p, note = args.p, ""
        if ps.memory_estimate(proto, p, max(fs)) > budget:
            p = ps.largest_p(proto, budget, max(fs))
            note = f"P={args.p} needs ~{ps.memory_estimate(proto, args.p, max(fs)) / 1e9:.1f} GB > budget"
        plat, topo = plats.get(args.topology, p)
        agreement = proto in ps.AGREEMENTS
        dims = ps.torus_order(topo, p) if agreement and args.order == "torus" else ()
        baseline = 0.0
        for f in sorted(set([0, *fs])):
            crashes, adv = ps.crash_schedule(proto, p, f, "during", baseline, seed=1)
            print(f"running {proto} at P = {p}, F = {f} ...", file=sys.stderr, flush=True)
            t0 = time.monotonic()
            try:
                out = ps.run_driver(plat, proto, p, crashes, adv, timeout=args.timeout,
                                    tree=args.tree if agreement else "binomial", torus=dims)
            except FtslideError as exc:
                rows.append([proto, p, f, "-", "-", "-", "-", "-", "-", str(exc)])
                continue
            wall = time.monotonic() - t0
            gb = out.get("maxrss_kb", 0) * 1024 / 1e9
            if f == 0:
                baseline = out["latency"]
            if f in fs:
                rows.append([proto, p, f, f"{wall:.1f}", f"{out['cpu']:.1f}", f"{gb:.2f}",
                             f"{out['latency'] * 1e6:.2f}", "yes" if wall <= WALL_TARGET_S else "NO",
                             "yes" if gb <= MEMORY_TARGET_GB else "NO", note])
    shape = f"{args.tree} tree, {args.order} order" if args.order else args.tree
    print(f"scale: one operation per row, {args.topology} (auto-sized), agreement on the {shape}; targets "
          f"{WALL_TARGET_S:.0f} s wall and {MEMORY_TARGET_GB:.2f} GB (4 GiB) peak; cpu_s = the driver's CPU time, "
          f"its wall time on an idle core; load average before/after {load0}/{load()}")
    print_table(["proto", "P", "F", "wall_s", "cpu_s", "peak_GB", "latency_us", "wall_ok", "memory_ok", "note"],
                rows)


def ratios(args: argparse.Namespace, plats: Platforms) -> None:
    budget = ps.available_memory() * args.fraction
    rows = []
    for kind in args.topologies.split(","):
        for p in ps.parse_p_list(args.ratio_p):
            if ps.memory_estimate("era", p) > budget:
                rows.append([kind, p, "-", "-", "-", "-", "-", f"needs ~{ps.memory_estimate('era', p) / 1e9:.1f} GB"])
                continue
            plat, topo = plats.get(kind, p)
            print(f"running the allreduce on {topo} ...", file=sys.stderr, flush=True)
            ar = ps.run_driver(plat, "allreduce", p, timeout=args.timeout)["latency"]
            for tree, order in SHAPES:
                if order == "torus" and topo.kind != "torus":
                    continue
                dims = ps.torus_order(topo, p) if order == "torus" else ()
                lat = {}
                for proto in ("era-early", "era"):
                    print(f"running {proto} ({tree}, {order} order) on {topo} ...", file=sys.stderr, flush=True)
                    lat[proto] = ps.run_driver(plat, proto, p, timeout=args.timeout, tree=tree, torus=dims)["latency"]
                rows.append([kind, p, f"{tree}/{order}", f"{ar * 1e6:.2f}", f"{lat['era-early'] * 1e6:.2f}",
                             f"{lat['era'] * 1e6:.2f}", f"{lat['era-early'] / ar:.2f}x", f"{lat['era'] / ar:.2f}x"])
    print("ratios: failure-free agreement against a binomial-tree allreduce of one int (same platform, rank r on "
          "host r); target <= 2x in both modes")
    print_table(["topology", "P", "tree/order", "allreduce_us", "early_us", "uniform_us", "early/allreduce",
                 "uniform/allreduce"], rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p", type=int, default=65536)
    ap.add_argument("--failures", default="0,8", help="failure counts of the scale table (default 0,8)")
    ap.add_argument("--topology", default="torus")
    ap.add_argument("--protos", default="era,era-early,bmg-lean")
    ap.add_argument("--tree", default="knomial4", choices=ps.TREES, help="agreement tree (default knomial4)")
    ap.add_argument("--order", default="torus", choices=ps.ORDERS, help="agreement order (default torus)")
    ap.add_argument("--ratios", action="store_true", help="print the ratio table instead of the scale table")
    ap.add_argument("--ratio-p", default="1024,4096,16384,65536")
    ap.add_argument("--topologies", default="torus,fattree")
    ap.add_argument("--fraction", type=float, default=0.3, help="share of free memory a run may use (default 0.3)")
    ap.add_argument("--timeout", type=float, default=1800.0)
    args = ap.parse_args()
    try:
        with tempfile.TemporaryDirectory(prefix="ftslide-bench-") as tmp:
            (ratios if args.ratios else scale)(args, Platforms(Path(tmp)))
    except FtslideError as exc:
        print(f"protocols_scale: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
