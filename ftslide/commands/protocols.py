"""``ftslide protocols``: check the protocol cores (protocheck) and simulate them at scale (SimGrid)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from ..simulation import protocols as ps
from ..errors import FtslideError
from ..ui.table import print_table

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "protocols"
HELP = "check the revoke/agreement cores (protocheck) or simulate them at scale with SimGrid"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    check = sub.add_parser("check", help="run the protocol checker on the cores",
                           description="Run protocheck (in-process simulator and property checker); "
                                       "without --proto every protocol is checked in turn.")
    check.add_argument("--proto", choices=ps.PROTOS, help="one protocol (default: all four)")
    check.add_argument("--p", help="process count N or range A-B")
    mode = check.add_mutually_exclusive_group()
    mode.add_argument("--exhaustive", action="store_true", help="every crash point and schedule within bounds")
    mode.add_argument("--schedules", type=int, metavar="K", help="K random schedules")
    check.add_argument("--max-crashes", type=int, metavar="F")
    check.add_argument("--delay-bound", type=int, metavar="B")
    check.add_argument("--master-seed", type=int, metavar="M")
    check.add_argument("--tree", choices=ps.TREES,
                       help="agreement tree shape for era/era-early (default binomial)")

    sim = sub.add_parser("simulate", help="simulate the cores on a torus or fat-tree with SimGrid",
                         description="Run the cores unchanged in SimGrid (one actor per process); "
                                     "report latency and messages against failures.")
    sim.add_argument("--p", default="64,256,1024", help="process counts, e.g. 1024,4096 (default 64,256,1024); a P whose simulation would not fit "
                          "in memory is refused before anything runs")
    sim.add_argument("--failures", default="0..8", help="failure counts F: 0..16 or 0,2,4 (default 0..8)")
    sim.add_argument("--topology", default="torus",
                     help="torus | fattree (sized for each P) or a spec: torus:16x16x16, fattree:2;16,16;1,16;1,1")
    sim.add_argument("--proto", default="era", choices=ps.PROTOS, help="protocol (default era)")
    sim.add_argument("--tree", default="knomial4", choices=ps.TREES,
                     help="agreement tree over the live positions: knomial4 (default), binomial or binary heap")
    sim.add_argument("--order", default="auto", choices=("auto", *ps.ORDERS),
                     help="agreement positions in rank order or in the folded torus order, so that the tree "
                          "follows the torus rings (needs a torus of exactly P hosts); auto (default): torus "
                          "order for an agreement on such a torus, rank order otherwise")
    sim.add_argument("--when", default="during", choices=("during", "before"),
                     help="failures discovered during the operation (default) or dead before it")
    sim.add_argument("--detect", default="1us", help="failure detection delay (default 1us)")
    sim.add_argument("--seed", type=int, default=1, help="seed of the failure draws (default 1)")
    sim.add_argument("--timeout", type=float, default=600.0, help="seconds per simulation (default 600)")
    sim.add_argument("--out", type=Path, help="write CSV, JSON and PNG plots here")


def run(args: argparse.Namespace) -> int:
    if args.action == "check":
        return _check(args)
    if args.action == "simulate":
        return _simulate(args)
    raise FtslideError("give an action: 'ftslide protocols check' or 'ftslide protocols simulate'")


def _check(args: argparse.Namespace) -> int:
    from ..toolchain.native import native_program

    prog = native_program("protocheck")
    opts: list[str] = []
    if args.p:
        opts += ["--p", args.p]
    if args.exhaustive:
        opts.append("--exhaustive")
    if args.schedules is not None:
        if args.schedules < 1:
            raise FtslideError("--schedules must be at least 1")
        opts += ["--schedules", str(args.schedules)]
    for flag, value in (("--max-crashes", args.max_crashes), ("--delay-bound", args.delay_bound),
                        ("--master-seed", args.master_seed), ("--tree", args.tree)):
        if value is not None:
            opts += [flag, str(value)]
    status = 0
    for proto in [args.proto] if args.proto else list(ps.PROTOS):
        proc = subprocess.run([str(prog), "--proto", proto, *opts, "--quiet"], capture_output=True, text=True)
        sys.stdout.write(proc.stdout)
        sys.stdout.flush()
        if proc.returncode == 2:  # protocheck's usage errors: one line
            line = (proc.stderr.strip().splitlines() or ["bad options"])[-1]
            raise FtslideError(line.removeprefix("protocheck: "))
        sys.stderr.write(proc.stderr)
        status = status or proc.returncode
    return status


def _simulate(args: argparse.Namespace) -> int:
    p_list = ps.parse_p_list(args.p)
    fs = ps.parse_failures(args.failures)
    detect = ps.parse_detect(args.detect)
    topos = [ps.topology_for(args.topology, p) for p in p_list]
    if args.order == "auto":
        on_torus = all(t.kind in ("torus", "ring") and t.hosts == p for t, p in zip(topos, p_list))
        args.order = "torus" if on_torus and args.proto in ps.AGREEMENTS else "rank"
    with tempfile.TemporaryDirectory(prefix="ftslide-protocols-") as tmp:
        work = Path(tmp)

        def progress(msg: str) -> None:
            print(f"  {msg}", file=sys.stderr, flush=True)

        res = ps.sweep(args.proto, p_list, fs, args.topology, work, when=args.when, detect=detect,
                       seed=args.seed, timeout=args.timeout, progress=progress, tree=args.tree,
                       order=args.order)
    rows = []
    for pt in res.points:
        base = next(q for q in res.points if q.p == pt.p and q.f == min(fs))
        rows.append([pt.p, pt.f, f"{pt.latency * 1e6:.2f}", f"{pt.latency / base.latency:.2f}x",
                     pt.messages, pt.bytes, pt.failed, f"{pt.wall:.2f}"])
    tree = f" ({args.tree} tree, {args.order} order)" if args.proto in ps.AGREEMENTS else ""
    print(f"{args.proto}{tree} on {args.topology}, failures {args.when} the operation, detection delay "
          f"{detect * 1e6:g} us")
    print_table(["P", "F", "latency_us", "vs_F0", "messages", "bytes", "agreed_failed", "wall_s"], rows)
    print()
    zero = {pt.p: pt.latency for pt in res.points if pt.f == 0}
    cmp_rows = [[p, f"{zero[p] * 1e6:.2f}" if p in zero else "-", f"{res.allreduce[p] * 1e6:.2f}",
                 f"{zero[p] / res.allreduce[p]:.2f}x" if p in zero else "-"] for p in sorted(res.allreduce)]
    print("failure-free latency against a binomial-tree allreduce of one int (same platform)")
    print_table(["P", f"{args.proto}_us", "allreduce_us", "ratio"], cmp_rows)
    if res.fits:
        print()
        print("fit latency(F) = a + b * sum_{f=1..F} log2(P - f)")
        print_table(["P", "a_us", "b_us", "R2"],
                    [[p, f"{fit.a * 1e6:.3f}", f"{fit.b * 1e6:.4f}", f"{fit.r2:.4f}"]
                     for p, fit in sorted(res.fits.items())])
    if args.out:
        paths = ps.write_outputs(res, args.out)
        print()
        for path in paths:
            print(f"wrote {path}")
    return 0
