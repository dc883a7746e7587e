#!/usr/bin/env python3
"""Issue 30's targets, measured side by side in one run: routed against the optimum, plan.

    python bench/sliding_optimal/run.py [--parts small,bound,surfaces,sim,plan,tsubame,time] [--cases 500]
                                        [--solver-time 20] [--draws 30] [--trials 5] [--jobs N]

Parts (each prints its own table, then one table of every target with measured / target):
  small    routed's max load against the exact optimum on --cases seeded small cases (tori 4x4 to
           6x5 and 4x4x3, 4x4x4, a 5x4 mesh; 1-3 failures; several spare layouts and routing
           orders): equal when routed meets the proven lower bound, else the CP-SAT solver decides
           (--solver-time s per case, one worker); every miss is listed with its case.
  bound    k (torus 12x12x12) and bgq (torus 16x8x8), spares x:1 (and k y:1, bgq y:1, z:1), 8 random
           failures, --draws draws: routed's max load against the proven lower bound
           (sliding.optimal.lower_bound): the share of draws at the bound (target >= 0.9).
  surfaces the same draws: where routed stays above the bound, whether any surface (one skipped
           node per line along x, y or z) can have load 2, by CP-SAT on the labelling rule
           (--solver-time s per orientation): the gap routed's surface candidates could close.
  sim      SimGrid stencil7 slowdown of routed after 8 failures, median of --trials draws, on k and
           bgq with spares x:1 (target <= 2.0), and bgq with the plane on y or z beside it.
  plan     `ftslide plan --preset k --failures 8 --spare-nodes 144`: seconds without SimGrid
           (target <= 60) and with --simulate 3 (target <= 300); the best plan's stencil7
           slowdown (target <= 1.5 if any layout can reach it: the bound says whether).
  tsubame  `ftslide plan --preset tsubame --failures 8 --spare-nodes 64 --simulate 1`: the best
           plan's simulated barrier and allreduce slowdowns (target <= 1.05).
  time     routed's mapping time at 1,728 nodes and 8 failures, median of --draws maps, CPU time
           (wall-clock beside it) (target <= 100 ms).
A benchmark, not a test: timings depend on the machine's load.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from ftslide.errors import FtslideError  # noqa: E402
from ftslide.simulation.network import PRESETS  # noqa: E402
from ftslide.simulation.placement import make_placement  # noqa: E402
from ftslide.simulation.sweep import SweepConfig, draw_failures, run_sweep  # noqa: E402
from ftslide.sliding import core as sc, optimal  # noqa: E402
from ftslide.sliding.topology import parse_topology  # noqa: E402
from ftslide.ui.table import print_table  # noqa: E402

# (grid, spares, routing order) of the small cases, taken in turn
SMALL = [("torus:4x4", "x:1", ""), ("torus:5x4", "x:1", ""), ("torus:4x5", "y:1", ""),
         ("torus:5x5", "x:1", "yx"), ("torus:6x5", "x:2", ""), ("torus:5x5", "x:1,y:1", ""),
         ("torus:4x4x4", "x:1", ""), ("torus:4x4x4", "y:1", "zyx"), ("mesh:5x4", "x:1", ""),
         ("torus:4x4x3", "x:1", "")]
TARGETS: list[list[object]] = []


def target(name: str, measured: float | None, goal: float, higher_is_better: bool = False, unit: str = "") -> None:
    if measured is None:
        TARGETS.append([name, "-", f"{goal:g}{unit}", "-", "not measured"])
        return
    ratio = measured / goal if goal else float("inf")
    met = measured >= goal if higher_is_better else measured <= goal
    TARGETS.append([name, f"{measured:.3g}{unit}", f"{'>=' if higher_is_better else '<='} {goal:g}{unit}",
                    f"{ratio:.2f}", "yes" if met else "NO"])


def small(cases: int, solver_time: float, seed: int = 1) -> None:
    rng = random.Random(f"ftslide-optimal-small:{seed}")
    tally: dict[str, list[int]] = {}
    misses, undecided = [], []
    t0 = time.monotonic()
    for i in range(cases):
        grid, spares, order = SMALL[i % len(SMALL)]
        layout = sc.make_layout(grid, spares, parse_topology(grid, order) if order else None)
        failed = rng.sample(layout.initial_map(), rng.randint(1, min(3, layout.spare_nodes)))
        routed = sc.compute_map(layout, "routed", failed)
        load = sc.measure(layout, routed).link_load_max
        best = optimal.optimum(layout, failed, [routed], time_limit=solver_time, workers=1, tiebreaks=False)
        row = tally.setdefault(f"{grid} {spares} {order or 'xyz'}", [0, 0, 0, 0])
        row[0] += 1
        if best.proven and best.link_load_max == load:
            row[1] += 1
        elif best.proven:
            row[2] += 1
            misses.append(f"{grid} spares {spares} order {order or 'xyz'} fail {','.join(map(str, failed))}: "
                          f"routed {load}, optimum {best.link_load_max}")
        else:
            row[3] += 1
            undecided.append(f"{grid} spares {spares} order {order or 'xyz'} fail {','.join(map(str, failed))}: "
                             f"routed {load}, optimum in [{best.lower_bound}, {best.link_load_max}]")
    print(f"\nsmall cases: routed's max load against the optimum, {cases} cases in "
          f"{time.monotonic() - t0:.0f} s (solver {solver_time:g} s per case)")
    print_table(["case", "cases", "routed = optimum", "routed above", "undecided"],
                [[k, *v] for k, v in tally.items()])
    for line in misses:
        print(f"  miss: {line}")
    for line in undecided:
        print(f"  undecided: {line}")
    decided = sum(v[1] + v[2] for v in tally.values())
    target("small cases: routed = optimum (share of decided)",
           sum(v[1] for v in tally.values()) / decided if decided else None, 1.0, higher_is_better=True)


def bound(draws: int) -> None:
    rows = []
    for name, spares in (("k", "x:1"), ("k", "y:1"), ("bgq", "x:1"), ("bgq", "y:1"), ("bgq", "z:1")):
        preset = PRESETS[name]
        placement = make_placement(parse_topology(preset.topology), preset.grid, spares)
        layout = placement.layout
        at, loads, bounds = 0, [], []
        for draw in draw_failures(placement, 8, draws, 1):
            load = sc.measure(layout, sc.compute_map(layout, "routed", draw)).link_load_max
            lb, _ = optimal.lower_bound(layout, draw)
            loads.append(load)
            bounds.append(lb)
            at += load <= lb
        spread = " ".join(f"{v}:{loads.count(v)}" for v in sorted(set(loads)))
        rows.append([f"{name} {spares}", draws, " ".join(f"{v}:{bounds.count(v)}" for v in sorted(set(bounds))),
                     spread, at, f"{at / draws:.2f}"])
        if spares == "x:1":
            target(f"{name} x:1: routed at the bound (share of {draws} draws)", at / draws, 0.9, True)
    print(f"\nrouted's max load after 8 failures against the proven lower bound, {draws} draws")
    print_table(["preset", "draws", "bound:draws", "routed load:draws", "at the bound", "share"], rows)


def _surface_labelling(layout, failed: list[int], order: str, e: int, seconds: float) -> str:
    """Whether a surface along physical dimension e (one skipped node per line, logical lines
    straight) can have max load 2 for these failures: "fits" no, "two on a line", else CP-SAT's
    answer on the labelling rule of docs/sliding-methods.md (each line's skipped coordinate; per
    line and side of e in the routing order, at most one neighbour skipping higher and one lower)."""
    sizes, logical = layout.grid.sizes, layout.logical
    p = [k for k in range(3) if k != e]
    if not any(logical[d] == sizes[e] - 1 and [logical[k] for k in range(3) if k != d] == [sizes[k] for k in p]
               for d in range(3)):
        return "does not fit"
    holes: dict[tuple[int, int], int] = {}
    for node in [*failed, *(n for n in range(layout.nodes) if layout.role(n) is sc.Role.UNUSED)]:
        c = layout.coords(node)
        if (c[p[0]], c[p[1]]) in holes:
            return "two on a line"
        holes[c[p[0]], c[p[1]]] = c[e]
    cp = optimal._cp_model()
    model, n = cp.CpModel(), [sizes[p[0]], sizes[p[1]]]
    label = {(a, b): model.NewIntVar(0, sizes[e] - 1, "") for a in range(n[0]) for b in range(n[1])}
    for line, h in holes.items():
        model.Add(label[line] == h)

    def above(x, y):  # a boolean: x > y
        flag = model.NewBoolVar("")
        model.Add(x > y).OnlyEnforceIf(flag)
        model.Add(x <= y).OnlyEnforceIf(flag.Not())
        return flag

    side = [order.index("xyz"[k]) > order.index("xyz"[e]) for k in p]
    for (a, b), mine in label.items():
        for group in (False, True):
            near = [label[(a + s) % n[0], b] for s in (-1, 1) if side[0] == group] + \
                   [label[a, (b + s) % n[1]] for s in (-1, 1) if side[1] == group]
            if len(near) > 1:
                model.Add(sum(above(x, mine) for x in near) <= 1)
                model.Add(sum(above(mine, x) for x in near) <= 1)
    solver = cp.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = 1
    return {cp.OPTIMAL: "exists", cp.FEASIBLE: "exists", cp.INFEASIBLE: "none"}.get(solver.Solve(model), "undecided")


def surfaces(draws: int, solver_time: float) -> None:
    """For every draw where routed stays above the bound: can any surface reach load 2?"""
    rows = []
    for name, spares in (("k", "x:1"), ("k", "y:1"), ("bgq", "x:1")):
        preset = PRESETS[name]
        topo = parse_topology(preset.topology)
        placement = make_placement(topo, preset.grid, spares)
        layout = placement.layout
        tally = {"above": 0, "a surface at 2 exists": 0, "no surface at 2": 0, "undecided": 0}
        for i, draw in enumerate(draw_failures(placement, 8, draws, 1)):
            load = sc.measure(layout, sc.compute_map(layout, "routed", draw)).link_load_max
            if load <= optimal.lower_bound(layout, draw)[0]:
                continue
            tally["above"] += 1
            answers = [_surface_labelling(layout, draw, topo.order, e, solver_time) for e in range(3)]
            key = ("a surface at 2 exists" if "exists" in answers else
                   "undecided" if "undecided" in answers else "no surface at 2")
            tally[key] += 1
            print(f"  {name} {spares} draw {i}: routed {load}; surfaces along x, y, z: {', '.join(answers)}")
        rows.append([f"{name} {spares}", draws, *tally.values()])
    print(f"\ndraws where routed stays above the bound: does a surface of load 2 exist? (CP-SAT, {solver_time:g} s)")
    print_table(["preset", "draws", "routed above the bound", "a surface at 2 exists", "no surface at 2",
                 "undecided"], rows)


def sim(trials: int, jobs: int) -> None:
    """The targets are for the presets' x:1 plane; bgq's planes on y and z (128 spare nodes against
    x's 64) are measured beside it: where the target is reachable on bgq at all."""
    rows = []
    for name, spares in (("k", "x:1"), ("bgq", "x:1"), ("bgq", "y:1"), ("bgq", "z:1")):
        preset = PRESETS[name]
        cfg = SweepConfig(topology=preset.topology, grid=preset.grid, spares=spares, methods=("routed", "hybrid"),
                          failures=(0, 8), patterns=("stencil7",), trials=trials, seed=1, net=preset.net, jobs=jobs)
        t0 = time.monotonic()
        summary, _ = run_sweep(cfg, progress=False)
        cell = {r["method"]: r for r in summary["rows"] if r["failures"] == 8}  # type: ignore[union-attr,index]
        sd = cell["routed"]["slowdown_median"]
        rows.append([f"{name} {spares}", f"{sd:.2f}", f"{cell['hybrid']['slowdown_median']:.2f}",
                     f"{cell['routed']['load_max_median']:g}", f"{time.monotonic() - t0:.0f}"])
        if spares == "x:1":
            target(f"{name} x:1: routed stencil7 after 8 failures (SimGrid, median of {trials})", sd, 2.0)
    print(f"\nSimGrid stencil7 slowdown after 8 failures, median of {trials} draws")
    print_table(["preset spares", "routed", "hybrid", "routed max load (median)", "seconds"], rows)


def run_plan(args: list[str]) -> tuple[float, dict]:
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "ftslide", "plan", *args, "--json", "--top", "0"], cwd=REPO,
                         capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=3600)
    if out.returncode != 0:
        raise FtslideError(f"ftslide plan {' '.join(args)}: {out.stderr.strip()}")
    return time.monotonic() - t0, json.loads(out.stdout)


def plan(jobs: int) -> None:
    base = ["--preset", "k", "--failures", "8", "--spare-nodes", "144"]
    seconds, doc = run_plan(base)
    best = doc["plans"][0]
    print(f"\nftslide plan --preset k --failures 8 --spare-nodes 144: {seconds:.0f} s without SimGrid; best "
          f"{best['spares']} {best['method']}, stencil7 {best['slowdown']['stencil']:.2f} (model)", flush=True)
    sim_seconds, sim_doc = run_plan(base + ["--simulate", "3", "--jobs", str(jobs)])
    sim_best = sim_doc["plans"][0]
    # the bound: no layout of 144 spare nodes (one plane) keeps 8 random failures in one plane
    placement = make_placement(parse_topology("torus:12x12x12"), None, best["spares"])
    bounds = [optimal.lower_bound(placement.layout, d)[0] for d in draw_failures(placement, 8, 20, 1)]
    print(f"with --simulate 3: {sim_seconds:.0f} s")
    print_table(["#", "spares", "method", "stencil7 (model)", "phased", "allreduce", "barrier", "stencil7 (SimGrid)"],
                [[p["rank"], p["spares"], p["method"], *(f"{p['slowdown'][k]:.2f}" for k in
                                                         ("stencil", "stencil-phased", "allreduce", "barrier")),
                  f"{p['simulated']['stencil']:.2f}" if p.get("simulated") else "-"] for p in sim_doc["plans"][:5]])
    print(f"lower bound of the max load for the best layout ({best['spares']}), 20 draws: "
          + " ".join(f"{v}:{bounds.count(v)}" for v in sorted(set(bounds)))
          + " (load 2 puts the concurrent stencil at about 2x: 1.5x is out of reach with 144 spare nodes)")
    target("plan k: seconds without SimGrid", seconds, 60, unit=" s")
    target("plan k: seconds with SimGrid (3 plans)", sim_seconds, 300, unit=" s")
    target("plan k: best plan's stencil7 (SimGrid)", (sim_best.get("simulated") or {}).get("stencil"), 1.5)


def tsubame(jobs: int) -> None:
    seconds, doc = run_plan(["--preset", "tsubame", "--failures", "8", "--spare-nodes", "64", "--simulate", "1",
                             "--jobs", str(jobs)])
    best = doc["plans"][0]
    simulated = best.get("simulated") or {}
    print(f"\nftslide plan --preset tsubame --failures 8 --spare-nodes 64 --simulate 1: {seconds:.0f} s; best "
          f"{best['spares']} {best['method']}: SimGrid " + ", ".join(f"{k} {v:.3f}" for k, v in simulated.items()))
    for pattern in ("barrier", "allreduce"):
        target(f"tsubame best plan ({best['spares']} {best['method']}): {pattern}", simulated.get(pattern), 1.05)


def mapping_time(draws: int) -> None:
    preset = PRESETS["k"]
    placement = make_placement(parse_topology(preset.topology), None, "x:1")
    wall, cpu = [], []
    for draw in draw_failures(placement, 8, draws, 1):
        t0, c0 = time.perf_counter(), time.process_time()
        sc.compute_map(placement.layout, "routed", draw)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    ms = statistics.median(cpu) * 1000
    print(f"\nrouted on 12x12x12 x:1, 8 failures, {draws} maps: CPU time median {ms:.0f} ms (min "
          f"{min(cpu) * 1000:.0f}), wall-clock median {statistics.median(wall) * 1000:.0f} ms (the machine's load "
          "adds to the wall clock)")
    target("routed mapping time (CPU), 1,728 nodes, 8 failures", ms, 100, unit=" ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="small,bound,surfaces,sim,plan,tsubame,time")
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--solver-time", type=float, default=20.0)
    parser.add_argument("--draws", type=int, default=30)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=0)
    args = parser.parse_args()
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    known = {"small", "bound", "surfaces", "sim", "plan", "tsubame", "time"}
    if set(parts) - known or min(args.cases, args.draws, args.trials) < 1 or not args.solver_time > 0:
        print(f"sliding_optimal: bad arguments: parts from {', '.join(sorted(known))}; --cases, --draws, --trials "
              ">= 1, --solver-time > 0", file=sys.stderr)
        return 2
    try:
        for part in parts:
            {"small": lambda: small(args.cases, args.solver_time), "bound": lambda: bound(args.draws),
             "surfaces": lambda: surfaces(args.draws, args.solver_time),
             "sim": lambda: sim(args.trials, args.jobs), "plan": lambda: plan(args.jobs),
             "tsubame": lambda: tsubame(args.jobs), "time": lambda: mapping_time(args.draws)}[part]()
    except FtslideError as exc:
        print(f"sliding_optimal: {exc}", file=sys.stderr)
        return 1
    print("\nissue 30's targets (ratio = measured / target)")
    print_table(["target", "measured", "target", "ratio", "met"], TARGETS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
