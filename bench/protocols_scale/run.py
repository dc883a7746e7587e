#!/usr/bin/env python3
"""Scale benchmark of the SimGrid protocol driver (see README.md).

For each protocol at P = 65,536 (or, if the memory estimate does not fit in
the budget, the largest power of two that does), on the auto-sized torus: wall
time and peak memory of one simulated operation (one SimGrid actor per
process), its simulated latency, and the latency ratio to a binomial-tree
allreduce measured side by side on the same platform. About two minutes and
2 GB of memory at P = 65,536; not a timed test.

    .venv/bin/python bench/protocols_scale/run.py [--p 65536] [--topology torus] [--tree binomial]
                                                  [--protos era,era-early,bmg-lean] [--fraction 0.3]
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p", type=int, default=65536)
    ap.add_argument("--topology", default="torus")
    ap.add_argument("--protos", default="era,era-early,bmg-lean")
    ap.add_argument("--tree", default="binomial", choices=ps.TREES, help="agreement tree (default binomial)")
    ap.add_argument("--fraction", type=float, default=0.3, help="share of free memory a run may use (default 0.3)")
    ap.add_argument("--timeout", type=float, default=1800.0)
    args = ap.parse_args()
    budget = ps.available_memory() * args.fraction
    rows = []
    platforms: dict[int, Path] = {}
    allreduce: dict[int, tuple[float, float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="ftslide-bench-") as tmp:
        def platform(p: int) -> Path:
            if p not in platforms:
                platforms[p] = ps.write_platform(ps.topology_for(args.topology, p), Path(tmp) / f"p{p}.xml")
            return platforms[p]

        def run(proto: str, p: int) -> tuple[float, float, float]:
            t0 = time.monotonic()
            out = ps.run_driver(platform(p), proto, p, timeout=args.timeout, tree=args.tree)
            return out["latency"], time.monotonic() - t0, out.get("maxrss_kb", 0) / 1e6

        for proto in args.protos.split(","):
            p = args.p
            note = ""
            if ps.memory_estimate(proto, p) > budget:
                need = ps.memory_estimate(proto, p)
                p = ps.largest_p(proto, budget)
                note = f"P={args.p} needs ~{need / 1e9:.0f} GB > {budget / 1e9:.0f} GB budget"
            print(f"running {proto} at P = {p} ...", file=sys.stderr, flush=True)
            try:
                lat, wall, gb = run(proto, p)
            except FtslideError as exc:
                rows.append([proto, p, "-", "-", "-", "-", "-", "-", str(exc)])
                continue
            if p not in allreduce:
                print(f"running allreduce at P = {p} ...", file=sys.stderr, flush=True)
                allreduce[p] = run("allreduce", p)
            ar_lat, ar_wall, _ = allreduce[p]
            rows.append([proto, p, f"{wall:.1f}", f"{gb:.2f}", f"{lat * 1e6:.2f}", f"{ar_lat * 1e6:.2f}",
                         f"{ar_wall:.1f}", f"{lat / ar_lat:.2f}x", note])
    print(f"one operation per row, topology {args.topology} (auto-sized), rank r on host r, CM02 network model, "
          f"{args.tree} agreement tree")
    print_table(["proto", "P", "wall_s", "peak_GB", "latency_us", "allreduce_us", "allreduce_wall_s", "ratio",
                 "note"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
