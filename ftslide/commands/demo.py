"""ftslide demo: the main job, a 3D stencil that survives SIGKILLed nodes through spare substitution."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from ..sliding import runtime as stencil
from ..errors import FtslideError
from ..toolchain import features
from ..toolchain.ompi import MPI_OPTION_HELP, require_prefix
from ..sliding import core, faults, mapview
from ..sliding.core import make_layout
from ..ui.table import print_table
from . import add_block_options

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "demo"
HELP = ("run the resilient 3D Jacobi stencil: nodes are SIGKILLed at chosen iterations, spares take "
        "their place along the slide, and the result must equal a failure-free run bit for bit")

DEFAULT_KILLS = ("1@12", "6@23")  # node@iteration


def _kill(text: str) -> tuple[int, str]:
    try:
        return stencil.parse_kill(text)
    except FtslideError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--grid", default="torus:3x2x2", help="node grid with spares (default torus:3x2x2)")
    parser.add_argument("--spares", default="x:1", help="spare layout (default x:1: one spare plane along x)")
    parser.add_argument("--method", help="a substitution method that keeps one rank per node, i.e. any but "
                        "shrink (docs/sliding-methods.md; default hybrid)")
    parser.add_argument("--kill", type=_kill, action="append", metavar="NODE@ITER",
                        help="SIGKILL node NODE at the start of iteration ITER, or at a named point "
                        "(NODE@POINT, POINT one of the runtime's kill points: checkpoint, waiting, the steps "
                        "of a recovery, promoted; docs/sliding-runtime.md); NODE@POINT#N: the Nth time the node "
                        "gets there (checkpoint#3; 12#2: iteration 12's second start, after a rollback); repeatable; "
                        f"default {' '.join(DEFAULT_KILLS)}")
    parser.add_argument("--n", type=int, default=8, help="points per rank and dimension (default 8)")
    parser.add_argument("--iterations", type=int, default=40, help="iterations (default 40)")
    parser.add_argument("--checkpoint-every", type=int, default=5, help="iterations between checkpoints (default 5)")
    add_block_options(parser, "processes per node (default 1): every node runs a block of K ranks and a kill "
                      "takes all K processes of its node; on this machine every K consecutive processes form "
                      "a node (docs/sliding-runtime.md)")
    parser.add_argument("--node-coords", metavar="FILE",
                        help="place the nodes on the grid from FILE: one line per node, its name (the node "
                        "number 0..N-1 in process order) and its grid coordinates (sliding_nodes.h)")
    parser.add_argument("--lang", choices=stencil.LANGUAGES, default="c",
                        help="the stencil's language: jacobi3d.c, .f90 (the Fortran module `sliding`) or .py "
                        "(numpy and mpi4py, the binding sliding/python); all print the same checksum (default c)")
    parser.add_argument("--redundancy", metavar="POLICY",
                        help="how each checkpoint survives its node: buddy (a copy on another node), parity:G "
                        "(groups of G nodes keep erasure-coded parity: any one of a group may die) or rs:G,M "
                        "(any M of a group may die) (default: the runtime's, buddy; docs/sliding-runtime.md)")
    parser.add_argument("--domains", metavar="AxB[xC]",
                        help="failure domains as boxes of that shape in the node grid (a board, a chassis): "
                        "buddies and groups are drawn across them so that losing one whole box loses no "
                        "checkpoint (default: every node its own domain, or the domain=LABEL fields of "
                        "--node-coords)")
    parser.add_argument("--checkpoint-dir", metavar="DIR",
                        help="the file level: every Nth committed checkpoint of the run with failures is also "
                        "written to DIR (an existing writable folder); a recovery that cannot rebuild a "
                        "checkpoint in memory rolls back to the newest one, and a run given a DIR that already "
                        "holds one resumes from it (the failure-free run writes to a temporary folder)")
    parser.add_argument("--file-every", type=int, metavar="N",
                        help="with --checkpoint-dir: every Nth committed checkpoint goes to files (default: "
                        "the runtime's, 4)")
    parser.add_argument("--on-no-spare", choices=("fail", "degrade"), default="fail",
                        help="when the failures exceed the spares: fail (ERR_NO_SPARE, the default) or degrade "
                        "(guests: a live node runs the lost node's block beside its own; the checksum must still "
                        "match)")
    parser.add_argument("--timeout", type=float, default=180, help="seconds before a run is killed")
    parser.add_argument("--mpi", metavar="PREFIX", help=MPI_OPTION_HELP)


def substitution_report(grid: str, spares: str, failed: list[int], block: tuple[int, ...] | None = None) -> None:
    """Hops and link loads of each method's map after the failures of the run (with a ``block``:
    of the ranks, K per node)."""
    layout = make_layout(grid, spares)
    results = [mapview.run_method(layout, method, failed, block) for method in stencil.runtime_methods()]
    print(f"\nsubstitution after failed nodes {','.join(map(str, failed)) or 'none'} on {grid}, spares {spares} "
          "(7-point stencil, dimension-order routing):")
    print_table(mapview.BRIEF_HEADERS, mapview.brief_rows(results))
    for r in results:
        if r.error is not None:
            print(f"  {r.error}")


def check_resumable(directory: Path | None, grid: str, ranks_per_node: int) -> None:
    """A checkpoint directory that already holds a checkpoint (its manifest, sliding_file.h) must be of
    this node grid and K, or the run cannot resume from it: one-line FtslideError before anything
    starts (the runtime checks the block and sizes too, at the start)."""
    try:
        text = (directory / "manifest").read_text() if directory is not None else ""
    except OSError:
        return
    fields = dict(line.partition(" ")[::2] for line in text.splitlines())
    if fields.get("grid", grid) != grid or fields.get("ranks_per_node", str(ranks_per_node)) != str(ranks_per_node):
        raise FtslideError(f"--checkpoint-dir {directory} holds a checkpoint of grid {fields.get('grid')} with "
                           f"{fields.get('ranks_per_node')} processes per node, not {grid} with {ranks_per_node}: "
                           "give an empty folder or the same layout")


def run(args: argparse.Namespace) -> int:
    kills = args.kill or [stencil.parse_kill(k) for k in DEFAULT_KILLS]
    args.method = args.method or core.Method.HYBRID.label
    for name in ("n", "iterations", "checkpoint_every"):
        if getattr(args, name) < 1:
            raise FtslideError(f"--{name.replace('_', '-')} must be at least 1")
    nodes = stencil.node_count(args.grid, args.spares, args.method)
    for node, point in kills:
        if node >= nodes:
            raise FtslideError(f"--kill {node}@{point}: the grid {args.grid} has nodes 0..{nodes - 1}")
    nodes_as = stencil.node_options(args.grid, args.spares, args.ranks_per_node, args.block,
                                    coords=args.node_coords)
    if args.file_every is not None and args.checkpoint_dir is None:
        raise FtslideError(f"--file-every {args.file_every} sets the file level's interval: give --checkpoint-dir DIR")
    checkpoints = stencil.checkpoint_options(args.grid, args.spares, args.redundancy, args.domains,
                                             args.checkpoint_dir, args.file_every, nodes_as=nodes_as,
                                             degrade=args.on_no_spare == "degrade")
    check_resumable(checkpoints.directory, args.grid, args.ranks_per_node)
    prefix = require_prefix(args.mpi)
    features.for_runs(prefix, "ftslide demo", lang=args.lang)
    program = stencil.build(prefix, args.lang)
    common = dict(n=args.n, iterations=args.iterations, checkpoint_every=args.checkpoint_every,
                  timeout=args.timeout, program=program, nodes_as=nodes_as)
    spec = " ".join(f"{node}@{point}" for node, point in kills)
    k = args.ranks_per_node
    block = nodes_as.sizes if k > 1 else None
    processes = f"{nodes} processes" if k == 1 else \
        f"{nodes * k} processes ({nodes} nodes x {k}, blocks of {core.block_text(block)})"
    language = "" if args.lang == "c" else f", jacobi3d in {args.lang}"
    policy = f", redundancy {args.redundancy}" if args.redundancy else ""
    policy += f", domains {args.domains}" if args.domains else ""
    resumes = faults.manifest_version(checkpoints.directory)
    if checkpoints.directory is not None:
        policy += f", file level in {checkpoints.directory} every {args.file_every or faults.DEFAULT_FILE_EVERY}" + \
            (f" (resuming from its checkpoint {resumes})" if resumes is not None else "")
    print(f"ftslide demo: {args.grid}, spares {args.spares}, method {args.method}{language}: {processes}, "
          f"{args.iterations} iterations, checkpoint every {args.checkpoint_every}{policy}", flush=True)
    with tempfile.TemporaryDirectory(prefix="ftslide-demo-") as scratch:  # the failure-free run's file level
        reference = stencil.run(prefix, args.grid, args.spares, args.method, **common,
                                checkpoints=checkpoints.with_directory(
                                    Path(scratch) if checkpoints.directory is not None else None))
    if reference.checksum is None:
        raise FtslideError(f"the failure-free run failed (exit {reference.returncode}): "
                           f"{'; '.join(map(str, reference.errors)) or 'no checksum printed'}")
    print(f"failure-free run: checksum {reference.checksum}", flush=True)
    started = time.monotonic()
    faulty = stencil.run(prefix, args.grid, args.spares, args.method, kills, **common, checkpoints=checkpoints)
    elapsed = time.monotonic() - started
    print(f"run with SIGKILL at {spec}: {len(faulty.recoveries)} recoveries, {elapsed:.1f} s")
    if faulty.recoveries:
        phases = list(faulty.recoveries[0].times)  # as the program reports them: agree ... total
        print_table(["#", "resume at", "failed nodes", "attempts", *(f"{p} ms" for p in phases)],
                    [[i + 1, r.resume_iteration, ",".join(map(str, r.failed)), r.attempts,
                      *(f"{r.times[p]:.2f}" for p in phases)]
                     for i, r in enumerate(faulty.recoveries)])
    missing = [f"{node}@{point}" for node, point in kills if faulty.killed.get(node) != point]
    if faulty.checksum is None:
        raise FtslideError(f"the run with failures did not finish (exit {faulty.returncode}): "
                           f"{'; '.join(map(str, faulty.errors)) or 'no checksum printed'}")
    failed = faulty.recoveries[-1].failed if faulty.recoveries else []
    substitution_report(args.grid, args.spares, failed, block)
    same = faulty.checksum == reference.checksum
    print(f"\nchecksum {faulty.checksum} {'==' if same else '!='} failure-free {reference.checksum}"
          f"{'' if not missing else ' (kills that never happened: ' + ' '.join(missing) + ')'}: "
          f"{'PASS' if same and not missing else 'FAIL'}")
    return 0 if same and not missing else 1
