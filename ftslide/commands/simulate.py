"""``ftslide simulate``: simulated communication slowdown after failures and substitution."""

from __future__ import annotations

import argparse
import signal
from pathlib import Path
from types import FrameType

from ..errors import FtslideError
from ..simulation.network import PRESETS, NetParams
from ..simulation.platform import platform_xml
from ..sliding import core as sc
from ..sliding.topology import GRAMMAR
from ..simulation.sweep import (
    SweepConfig,
    parse_failures,
    run_sweep,
    validate,
    write_outputs,
)
from ..ui.table import print_table
from ..units import parse_rate, parse_size, parse_speed, parse_time
from . import add_block_options

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "simulate"
HELP = ("simulate on SimGrid how much slower stencil, barrier and allreduce communication gets "
        "after f failures with a spare layout and substitution method")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", choices=sorted(PRESETS),
                        help="a published setup: k (12x12x12 torus), bgq (16x8x8 torus), "
                             "tsubame (fat-tree); other options override its values")
    parser.add_argument("--topology", metavar="SPEC",
                        help=f"the network: {GRAMMAR} (quote specs with ';')")
    parser.add_argument("--route-order", default="", metavar="ORDER",
                        help="dimension order of torus/mesh routing, a permutation such as xyz "
                        "(the default) or zyx")
    parser.add_argument("--grid", help="the stencil's node grid for the sliding core (default: "
                        "the topology itself when it is a 2D/3D torus or mesh)")
    parser.add_argument("--spares", help="spare layout, e.g. x:1, or a spare set z:1/16:1 (K=1 spare per "
                        "block of M=16 node ids: per leaf switch or group) (default x:1)")
    parser.add_argument("--methods", help="comma-separated substitution methods (default: every method "
                        "that keeps one rank per node, all but shrink)")
    parser.add_argument("--expect-failures", type=int, default=0, metavar="N",
                        help="routed's spare budget: keep a free spare node for each of the N "
                        "failures expected (default 0: no reservation)")
    add_block_options(parser, "ranks per node (default 1): every host runs a block of K ranks of the rank grid, "
                      "which move with their node; messages inside a host use its loopback, not the network")
    parser.add_argument("--failures", default="0..8", help="failure counts: 0..8 or 0,2,4")
    parser.add_argument("--patterns", default="stencil7,barrier,allreduce",
                        help="comma-separated kernels: stencil7 (stencil5 in 2D; every halo at "
                             "once), stencil7-phased (x halos, then y, then z), barrier, "
                             "allreduce (default %(default)s)")
    parser.add_argument("--trials", type=int, default=5,
                        help="random failure draws per point (default %(default)s)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bw", help="link bandwidth per direction, e.g. 5GBps")
    parser.add_argument("--lat", help="link latency, e.g. 100ns")
    parser.add_argument("--speed", help="host speed, e.g. 100Gf")
    parser.add_argument("--halo", default="64K", help="stencil message size (default %(default)s)")
    parser.add_argument("--allreduce-size", default="8",
                        help="allreduce vector size in bytes (default %(default)s)")
    parser.add_argument("--iters", type=int, default=1, help="repetitions of each kernel")
    parser.add_argument("--jobs", type=int, default=0,
                        help="parallel smpirun processes (default: the number of cores)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds per smpirun before it is killed (default %(default)s)")
    parser.add_argument("--analytic-only", action="store_true",
                        help="only the analytic congestion model, no SimGrid")
    parser.add_argument("--no-cache", action="store_true", help="re-run cached simulations")
    parser.add_argument("--out", required=True, help="directory for the CSV, JSON and PNG files")


def config_from_args(args: argparse.Namespace) -> SweepConfig:
    preset = PRESETS[args.preset] if args.preset else None
    topology = args.topology or (preset.topology if preset else None)
    if topology is None:
        raise FtslideError("no topology: give --topology (e.g. torus:12x12x12) or --preset k")
    base = preset.net if preset else NetParams()
    net = NetParams(
        bw=parse_rate(args.bw, "bandwidth") if args.bw else base.bw,
        lat=parse_time(args.lat, "latency") if args.lat else base.lat,
        speed=parse_speed(args.speed, "host speed") if args.speed else base.speed)
    grid = args.grid or (preset.grid if preset and not args.topology else None)
    return SweepConfig(
        topology=topology, grid=grid,
        spares=args.spares or (preset.spares if preset else "x:1"),
        methods=tuple(m.strip() for m in args.methods.split(",") if m.strip()) if args.methods is not None else
        tuple(m.label for m in sc.methods() if m.one_rank_per_node),
        failures=parse_failures(args.failures),
        patterns=tuple(p.strip() for p in args.patterns.split(",") if p.strip()),
        trials=args.trials, seed=args.seed, net=net,
        halo_bytes=parse_size(args.halo, "--halo"),
        allreduce_bytes=parse_size(args.allreduce_size, "--allreduce-size"),
        iters=args.iters, jobs=args.jobs, timeout=args.timeout,
        simulate=not args.analytic_only, use_cache=not args.no_cache,
        route_order=args.route_order, expect=args.expect_failures, ranks_per_node=args.ranks_per_node,
        block=args.block)


def _fmt(value: object, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec) if isinstance(value, float) else str(value)


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # the sweep then kills its running smpirun processes


def run(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGTERM, _terminate)
    cfg = config_from_args(args)
    topology, placement = validate(cfg)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise FtslideError(f"--out {out} is a file: give a directory")
    if cfg.simulate:
        from ..simulation.smpi import build_kernels
        build_kernels()  # a missing smpicc fails here, before any work
    ranks = f"{placement.layout.ranks} ranks" if placement.block is None else \
        (f"{placement.layout.ranks * placement.ranks_per_node} ranks ({placement.ranks_per_node} per node, "
         f"blocks of {sc.block_text(placement.block)})")
    print(f"ftslide simulate: {topology} ({topology.hosts} hosts), grid {placement.layout.grid} "
          f"spares {placement.layout.spares}: {ranks}, "
          f"{placement.spare_nodes} spare nodes", flush=True)
    summary, trials = run_sweep(cfg)
    rows = summary["rows"]
    assert isinstance(rows, list)
    headers = ["method", "failures", "pattern", "slowdown", "min", "max", "model", "load max",
               "hops max", "ok/trials"]
    table = []
    for r in rows:
        table.append([r["method"], r["failures"], r["pattern"],
                      _fmt(r["slowdown_median"]), _fmt(r["slowdown_min"]),
                      _fmt(r["slowdown_max"]), _fmt(r["model_slowdown_median"]),
                      _fmt(r["load_max_median"], "g"), _fmt(r["hops_max_median"], "g"),
                      f"{r['trials_ok']}/{r['trials']}"])
    print_table(headers, table)
    errs = sorted({str(r["error"]) for r in rows if r["error"]})
    for e in errs[:5]:
        print(f"note: {e}")
    written = write_outputs(out, summary, trials, platform_xml(topology, cfg.net))
    print(f"ftslide simulate: {summary['simulations']} simulations; wrote "
          + ", ".join(p.name for p in written) + f" in {out}")
    return 0
