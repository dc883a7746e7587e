"""``ftslide plan``: rank spare layouts x substitution methods for a machine and a failure budget."""

from __future__ import annotations

import argparse
import json
import signal
import time
from pathlib import Path
from types import FrameType

from ..errors import FtslideError
from ..simulation import plan as pl
from ..simulation.network import PRESETS, NetParams
from ..sliding import core as sc
from ..sliding.topology import GRAMMAR, parse_topology
from ..ui.output import check_figure_path
from ..ui.progress import Bar
from ..ui.table import print_table
from ..units import parse_rate, parse_size, parse_time

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "plan"
HELP = ("rank spare layouts (which dimension, one or two planes, spares per leaf switch or group) "
        "crossed with substitution methods for a number of failures and a budget of spare nodes")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", choices=sorted(PRESETS),
                        help="a published machine: k (12x12x12 torus), bgq (16x8x8 torus), tsubame "
                        "(fat-tree, 8x8x8 grid); --topology, --grid and the link options override it")
    parser.add_argument("--topology", metavar="SPEC", help=f"the network: {GRAMMAR} (quote specs with ';')")
    parser.add_argument("--route-order", default="", metavar="ORDER",
                        help="dimension order of torus/mesh routing (default xyz)")
    parser.add_argument("--grid", help="the stencil's node grid, spares included (default: the topology "
                        "itself when it is a 2D/3D torus or mesh)")
    parser.add_argument("--spare-nodes", type=int, required=True, metavar="N",
                        help="the budget: at most N spare nodes")
    parser.add_argument("--failures", type=int, metavar="F", help="failures to survive")
    parser.add_argument("--mtbf", type=float, metavar="HOURS",
                        help="instead of --failures: the MTBF of one node in hours (with --hours): "
                        "F is the count 99%% of runs stay within, and the probability of running "
                        "out is that of more failures than spares")
    parser.add_argument("--hours", type=float, metavar="H", help="the run length in hours (with --mtbf)")
    parser.add_argument("--layouts", metavar="L[;L...]",
                        help="compare these spare layouts only, ';'-separated (x:1;y:1;z:1/16:1) "
                        "(default: every one of at most --spare-nodes spare nodes)")
    parser.add_argument("--methods", help="comma-separated methods (default: every one that keeps one "
                        "rank per node)")
    parser.add_argument("--draws", type=int, default=20,
                        help="random failure draws per layout (default %(default)s)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--simulate", type=int, default=0, metavar="K",
                        help="confirm the K best plans in SimGrid (default 0: the analytic model only)")
    parser.add_argument("--trials", type=int, default=5,
                        help="failure draws per plan SimGrid simulates (default %(default)s)")
    parser.add_argument("--top", type=int, default=10, metavar="N",
                        help="rows of the table and plans in --json (default %(default)s; 0: every plan)")
    parser.add_argument("--bw", help="link bandwidth per direction, e.g. 5GBps")
    parser.add_argument("--lat", help="link latency, e.g. 100ns")
    parser.add_argument("--halo", default="64K", help="stencil message size (default %(default)s)")
    parser.add_argument("--jobs", type=int, default=0, help="parallel smpirun processes (default: cores)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--plot", type=Path, metavar="FILE",
                        help="draw the slowdown after 1..F failures of the best plans (.png or .svg)")


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # a SimGrid confirmation then kills its running smpirun processes


def config_from_args(args: argparse.Namespace) -> pl.PlanConfig:
    preset = PRESETS[args.preset] if args.preset else None
    topology = args.topology or (preset.topology if preset else None)
    if topology is None:
        raise FtslideError("no machine: give --topology (e.g. torus:12x12x12) or --preset k")
    base = preset.net if preset else NetParams()
    net = NetParams(bw=parse_rate(args.bw, "bandwidth") if args.bw else base.bw,
                    lat=parse_time(args.lat, "latency") if args.lat else base.lat, speed=base.speed)
    layouts = tuple(s.strip() for s in args.layouts.split(";") if s.strip()) if args.layouts else ()
    if args.layouts is not None and not layouts:
        raise FtslideError("--layouts is empty: give layouts such as x:1;y:1")
    methods = tuple(m.strip() for m in args.methods.split(",") if m.strip()) if args.methods else \
        tuple(m.label for m in sc.methods() if m.one_rank_per_node)
    for m in methods:
        if not sc.parse_method(m).one_rank_per_node:
            raise FtslideError(f"method {m} uses no spare node: plan compares methods that keep one rank "
                               "per node")
    if not methods:
        raise FtslideError("--methods is empty: give methods such as hybrid,routed")
    for option, value, low in (("--draws", args.draws, 1), ("--simulate", args.simulate, 0),
                               ("--trials", args.trials, 1), ("--top", args.top, 0), ("--jobs", args.jobs, 0)):
        if value < low:
            raise FtslideError(f"{option} must be at least {low}, not {value}")
    return pl.PlanConfig(topology=topology, grid=args.grid or (preset.grid if preset and not args.topology
                                                               else None),
                         spare_nodes=args.spare_nodes, failures=args.failures, mtbf_hours=args.mtbf,
                         run_hours=args.hours, route_order=args.route_order, layouts=layouts,
                         methods=methods, draws=args.draws, seed=args.seed, net=net,
                         halo_bytes=parse_size(args.halo, "--halo"))


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def run(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGTERM, _terminate)
    start = time.monotonic()
    cfg = config_from_args(args)
    plot_path = check_figure_path(args.plot) if args.plot else None
    topology = parse_topology(cfg.topology, cfg.route_order)
    grid = pl.grid_of(topology, cfg.grid)
    if cfg.spare_nodes < 1:
        raise FtslideError(f"--spare-nodes must be at least 1, not {cfg.spare_nodes}")
    if cfg.failures is not None and cfg.failures > cfg.spare_nodes:
        raise FtslideError(f"{cfg.failures} failures need at least {cfg.failures} spare nodes: --spare-nodes "
                           f"{cfg.spare_nodes} is too small")
    layouts = pl.candidate_layouts(topology, grid, cfg.spare_nodes, cfg.layouts)
    failures = pl.failures_to_survive(cfg, max(p.layout.ranks for p in layouts))
    if failures > cfg.spare_nodes:
        raise FtslideError(f"{failures} failures need at least {failures} spare nodes: --spare-nodes "
                           f"{cfg.spare_nodes} is too small")
    layouts = [p for p in layouts if p.spare_nodes >= failures]
    if not layouts:
        raise FtslideError(f"no layout within --spare-nodes {cfg.spare_nodes} has {failures} spare nodes "
                           "(spare sets leave nodes unused): raise --spare-nodes")
    if args.simulate:
        from ..simulation.smpi import build_kernels
        build_kernels()   # a missing smpicc fails here, before any work
    ndims = len(layouts[0].layout.grid.sizes)
    stencil = "stencil7" if ndims == 3 else "stencil5"
    if not args.json:
        print(f"ftslide plan: {topology}, grid {grid}, {failures} failures, at most {cfg.spare_nodes} spare "
              f"nodes: {len(layouts)} layouts x {len(cfg.methods)} methods, {cfg.draws} draws each", flush=True)
    bar = None if args.json else Bar(len(layouts) * len(cfg.methods) * cfg.draws, "model")
    plans = []
    for placement in layouts:
        plans += pl.score(cfg, placement, cfg.methods, failures, bar.step if bar else None)
    ranked = pl.rank(plans)
    by_spares = {str(p.layout.spares): p for p in layouts}
    shown = ranked[: max(3, args.simulate)]
    if plot_path or args.json:
        for plan in shown:
            pl.curves(cfg, by_spares[plan.spares], plan)
    for plan in ranked[: args.simulate]:
        if not args.json:
            print(f"simulating {plan.spares} {plan.method} in SimGrid ({args.trials} draws)", flush=True)
        pl.confirm(cfg, plan, args.trials, args.jobs)
    elapsed = time.monotonic() - start
    rows = ranked[: args.top] if args.top else ranked
    if args.json:
        print(json.dumps({"topology": str(topology), "grid": grid, "failures": failures,
                          "spare_nodes": cfg.spare_nodes, "draws": cfg.draws, "seed": cfg.seed,
                          "mtbf_hours": cfg.mtbf_hours, "run_hours": cfg.run_hours,
                          "patterns": [p.replace("stencil", stencil) for p in pl.PATTERNS],
                          "seconds": round(elapsed, 1),
                          "plans": [pl.as_dict(p, i + 1) for i, p in enumerate(rows)]}, indent=1))
    else:
        headers = ["#", "spares", "method", "spare nodes", "idle", stencil, "phased", "allreduce", "barrier",
                   "max load", "P(out)"]
        if args.simulate:
            headers += [f"sim {stencil}", "sim phased", "sim allreduce", "sim barrier"]
        table = []
        for i, p in enumerate(rows):
            row = [i + 1, p.spares, p.method, p.spare_nodes, p.idle_nodes,
                   *(_cell(p.slowdown.get(k)) for k in pl.PATTERNS),
                   "-" if p.load_max == float("inf") else f"{p.load_max:g}", f"{p.p_out:.3f}"]
            if args.simulate:
                row += [_cell((p.simulated or {}).get(k)) if p.simulated else "" for k in pl.PATTERNS]
            table.append(row)
        print(f"slowdown after {failures} failures, median of {cfg.draws} draws (analytic model"
              + (f"; sim: SimGrid, {args.trials} draws" if args.simulate else "") + "); P(out): "
              + ("runs with more failures than spares (Poisson)" if cfg.mtbf_hours else
                 "draws the method could not place"))
        print_table(headers, table)
        if len(rows) < len(ranked):
            print(f"({len(ranked) - len(rows)} more plans: --top 0 shows every one)")
    if plot_path:
        pl.plot(plot_path, shown, f"{topology}, grid {grid}: the best plans, model slowdown", ndims)
    if not args.json:
        best = ranked[0]
        print(f"best: spares {best.spares} with {best.method}: {stencil} {_cell(best.slowdown.get('stencil'))}x "
              f"after {failures} failures (model); {elapsed:.0f} s" + (f"; plot: {plot_path}" if plot_path else ""))
    return 0
