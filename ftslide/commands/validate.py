"""``ftslide validate``: real runs of the substitution maps on an emulated cluster beside SimGrid's prediction."""

from __future__ import annotations

import argparse
import json
import os
import signal
from pathlib import Path
from types import FrameType

from ..errors import FtslideError
from .. import validate
from ..units import parse_size
from ..simulation.platform import platform_xml
from ..sliding.core import block_text
from ..sliding.topology import GRAMMAR
from ..ui.output import write_text
from ..ui.table import print_table
from . import add_block_options

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "validate"
HELP = ("run the stencil kernel as real Open MPI processes on an emulated cluster, failure-free and "
        "under each method's map after seeded failures, and compare the measured slowdown with SimGrid's")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topology", default="torus:3x3x3", metavar="SPEC",
                        help=f"the network: {GRAMMAR}; no dragonfly (default %(default)s)")
    parser.add_argument("--route-order", default="", metavar="ORDER",
                        help="dimension order of torus/mesh routing, e.g. xyz (the default) or zyx")
    parser.add_argument("--grid", help="the stencil's node grid (default: the topology when it is a 2D/3D "
                        "torus or mesh; needed on a fat-tree, e.g. torus:4x2x2)")
    parser.add_argument("--spares", default="x:1", help="spare layout (default %(default)s)")
    parser.add_argument("--methods", help="comma-separated substitution methods, not shrink "
                        "(default simple,slide1d,hybrid,routed)")
    parser.add_argument("--failures", type=int, default=2, help="failed nodes (default %(default)s)")
    parser.add_argument("--seed", type=int, default=1,
                        help="seed of the failed nodes' draw, the draw of 'ftslide simulate' trial 0 "
                        "(default %(default)s)")
    parser.add_argument("--rate", default="1mbit",
                        help="rate of every link in each direction, such as 1mbit or 20mbit (default %(default)s)")
    parser.add_argument("--delay", help="delay of every link, a duration such as 1ms (needs netem)")
    parser.add_argument("--halo", default="64K", help="halo message size (default %(default)s)")
    parser.add_argument("--pattern", default="stencil7",
                        help="stencil7: every halo at once, or stencil7-phased: x, then y, then z "
                        "(stencil5 in 2D) (default %(default)s)")
    parser.add_argument("--iterations", type=int, default=3,
                        help="timed halo exchanges per run, after one untimed (default %(default)s)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of each map, interleaved across maps (default %(default)s)")
    add_block_options(parser, "processes per node (default 1): every node runs a block of K ranks of the "
                      "kernel's rank grid, K slots per namespace node, K ranks per SimGrid host")
    parser.add_argument("--no-calibration", action="store_true",
                        help="predict with the bare platform: no calibration run of the host speed and the "
                        "CPU work per byte sent (docs/simulations.md, \"Calibration\")")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds per mpirun before it is killed (default %(default)s)")
    parser.add_argument("--name", help="name of the emulated cluster (default v<pid>)")
    parser.add_argument("--out", default="validate-out",
                        help="directory for validate.json and validate.png (default %(default)s)")
    parser.add_argument("--json", action="store_true", help="print the JSON document instead of the table")


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # the cluster is then removed


def _fmt(value: object, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def run(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGTERM, _terminate)
    cfg = validate.ValidateConfig(
        topology=args.topology, grid=args.grid, spares=args.spares,
        methods=tuple(m.strip() for m in args.methods.split(",") if m.strip()) if args.methods is not None else
        validate.default_methods(),
        failures=args.failures, seed=args.seed, rate=args.rate, delay=args.delay,
        halo=parse_size(args.halo, "--halo"), pattern=args.pattern, iterations=args.iterations,
        repeats=args.repeats, route_order=args.route_order, name=args.name or f"v{os.getpid()}",
        timeout=args.timeout, ranks_per_node=args.ranks_per_node, block=args.block,
        calibrate=not args.no_calibration)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise FtslideError(f"--out {out} is a file: give a directory")
    parent = next((p for p in out.absolute().parents if p.exists()), Path("/"))
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise FtslideError(f"--out {out} cannot be created under {parent}: give a writable directory")
    checked = validate.plan(cfg)  # every check before anything is created
    doc = validate.run(checked)
    try:
        out.mkdir(parents=True, exist_ok=True)  # only now: a failed run leaves nothing behind
    except OSError as exc:
        raise FtslideError(f"cannot create --out {out}: {exc.strerror}") from None
    write_text(out / "validate.json", json.dumps(doc, indent=1) + "\n")
    write_text(out / "platform.xml", platform_xml(checked.topology, checked.net))
    validate.plot(doc, out / "validate.png")
    if args.json:
        print(json.dumps(doc, indent=1))
        return 0
    base = doc["failure_free"]
    assert isinstance(base, dict)
    per_node = "" if doc["ranks_per_node"] == 1 else \
        f", {doc['ranks_per_node']} per node as {block_text(doc['block'] or [])} blocks"
    print(f"{doc['topology']}, grid {doc['grid']} spares {doc['spares']} ({doc['ranks']} ranks{per_node}), "
          f"{doc['pattern']} halo {doc['halo']} B, links {doc['rate']}; failed nodes {doc['failed_nodes']}")
    cal = doc["calibration"]
    if isinstance(cal, dict):
        print(f"calibration: host speed {cal['host_speed'] / 1e6:.1f} Mflop/s (shared by a node's ranks), send "
              f"work {cal['send_work']:.4g} flop/byte ({cal['message_overhead'] * 1e3:.2f} ms per halo at full "
              f"speed); failure-free {cal['failure_free_time']:.4f} s measured, SimGrid "
              f"{cal['uncalibrated_time']:.4f} s bare, {cal['calibrated_time']:.4f} s calibrated")
    print(f"failure-free: measured {_fmt(base['measured_time'], '.4f')} s per iteration (spread "
          f"{_fmt(base['spread_pct'], '.1f')} % over {doc['repeats']} runs), SimGrid "
          f"{_fmt(base['predicted_time'], '.4f')} s, error {_fmt(base['error_pct'], '+.1f')} %")
    rows = [[m["method"], _fmt(m["measured_slowdown"]),
             f"{_fmt(m['measured_slowdown_min'])}-{_fmt(m['measured_slowdown_max'])}",
             _fmt(m["predicted_slowdown"]), _fmt(m["error_pct"], "+.1f"), _fmt(m["measured_time"], ".4f"),
             _fmt(m["predicted_time"], ".4f"), _fmt(m["time_error_pct"], "+.1f")] for m in doc["methods"]]
    print_table(["method", "measured", "min-max", "predicted", "error %", "time s", "SimGrid s", "time error %"],
                rows)
    for m in doc["methods"]:
        if m["error"]:
            print(f"note: {m['method']}: {m['error']}")
    print(f"wrote {out / 'validate.json'}, {out / 'validate.png'} and {out / 'platform.xml'}")
    return 0
