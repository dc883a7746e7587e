#!/usr/bin/env python3
"""Real runs against SimGrid: ftslide validate's targets, measured side by side in one run.

    python bench/validate/run.py [--repeats N] [--only torus|phased|fattree] [--rate R] [--halo BYTES]

Cases (each one `ftslide validate` run, methods simple, slide1d, hybrid, routed, 2 seeded failures):
  torus    torus:3x3x3, spares x:1 (18 ranks, 9 spares), stencil7
  phased   the same, stencil7-phased
  fattree  fattree:4 (16 hosts, 20 switches), grid torus:4x2x2, spares x:1 (12 ranks, 4 spares), stencil7

Printed per case: the failure-free time measured and predicted, then per method the measured slowdown
(median of the per-repeat ratios, min-max), SimGrid's, the error and |error| / 15 % (the target: <= 1).
Then the trends: on the torus, simple's measured slowdown / the best sliding method's (the published
trend: clearly above 1); on the fat-tree, the largest measured slowdown / 1.10 (target: <= 1).
The load average is printed before and after each case: on a shared 2-core machine, read the spread.
Needs root (network namespaces). Not a timed test.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ftslide.errors import FtslideError
from ftslide import validate
from ftslide.sliding import core as sc
from ftslide.ui.table import print_table

CASES = {
    "torus": dict(topology="torus:3x3x3", grid=None, pattern="stencil7"),
    "phased": dict(topology="torus:3x3x3", grid=None, pattern="stencil7-phased"),
    "fattree": dict(topology="fattree:4", grid="torus:4x2x2", pattern="stencil7"),
}
TARGET = 15.0


def one(case: str, repeats: int, rate: str, halo: int, seed: int) -> dict[str, object]:
    spec = CASES[case]
    cfg = validate.ValidateConfig(topology=str(spec["topology"]), grid=spec["grid"], spares="x:1",  # type: ignore[arg-type]
                                  methods=validate.default_methods(), failures=2, seed=seed, rate=rate, halo=halo,
                                  pattern=str(spec["pattern"]), iterations=3, repeats=repeats,
                                  name=f"vb{os.getpid() % 100000}")
    load0 = os.getloadavg()[0]
    t0 = time.monotonic()
    doc = validate.run(validate.plan(cfg), log=None)
    wall = time.monotonic() - t0
    base = doc["failure_free"]
    print(f"\n== {case}: {doc['topology']} grid {doc['grid']} spares {doc['spares']}, {doc['pattern']} halo "
          f"{halo} B, links {rate}, failed nodes {doc['failed_nodes']}, {repeats} repeats, {wall:.0f} s, "
          f"load {load0:.1f} -> {os.getloadavg()[0]:.1f}")
    print(f"failure-free: measured {base['measured_time']:.4f} s (spread {base['spread_pct']:.1f} %), "  # type: ignore[index]
          f"SimGrid {base['predicted_time']:.4f} s, error {base['error_pct']:+.1f} %")  # type: ignore[index]
    rows = []
    for m in doc["methods"]:  # type: ignore[union-attr]
        if m["error"]:
            rows.append([m["method"], "-", "-", "-", "-", m["error"][:40]])
            continue
        rows.append([m["method"], f"{m['measured_slowdown']:.3f}",
                     f"{m['measured_slowdown_min']:.3f}-{m['measured_slowdown_max']:.3f}",
                     f"{m['predicted_slowdown']:.3f}", f"{m['error_pct']:+.1f}",
                     f"{abs(m['error_pct']) / TARGET:.2f}"])
    print_table(["method", "measured", "min-max", "SimGrid", "error %", "|error| / 15 %"], rows)
    measured = {m["method"]: m["measured_slowdown"] for m in doc["methods"] if m["measured_slowdown"]}  # type: ignore
    if case == "fattree":
        worst = max(measured.values())
        print(f"trend: largest measured slowdown {worst:.3f}, / 1.10 target = {worst / 1.10:.2f} (<= 1)")
    else:
        simple = sc.Method.SIMPLE.label
        best = min(v for k, v in measured.items() if k != simple)
        predicted = {m["method"]: m["predicted_slowdown"] for m in doc["methods"]}  # type: ignore
        print(f"trend: {simple} / best sliding method (measured) = {measured[simple] / best:.2f} "
              f"(SimGrid {predicted[simple] / min(v for k, v in predicted.items() if k != simple):.2f})")
    return doc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--only", choices=sorted(CASES), action="append")
    ap.add_argument("--rate", default="1mbit")
    ap.add_argument("--halo", type=int, default=65536)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    try:
        for case in args.only or list(CASES):
            one(case, args.repeats, args.rate, args.halo, args.seed)
    except FtslideError as exc:
        print(f"bench/validate: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
