"""ftslide demo: the main job, a ULFM run that survives ranks killed with SIGKILL."""

from __future__ import annotations

import argparse
import re
import time

from ..errors import FtslideError
from ..mpi import compile_program, run as mpirun
from ..native import REPO
from ..ompi_build import require_prefix

NAME = "demo"
HELP = ("run the ULFM survival example: ranks are SIGKILLed at chosen iterations, the survivors "
        "revoke, shrink and finish with checked results")

SOURCE = REPO / "ompi-ulfm" / "examples" / "survive.c"


def _kill_spec(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"(\d+)@(\d+)", text)
    if not match:
        raise argparse.ArgumentTypeError(f"invalid kill {text!r}: use RANK@ITERATION, e.g. 2@5")
    return int(match[1]), int(match[2])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--np", type=int, default=4, help="number of ranks (default 4)")
    parser.add_argument("--iterations", type=int, default=20, help="iterations of the loop (default 20)")
    parser.add_argument("--kill", type=_kill_spec, action="append", metavar="RANK@ITER",
                        help="SIGKILL world rank RANK at the start of iteration ITER (repeatable; "
                        "default 2@5 and 1@12)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds before the run is killed")


def expected_checksum(np: int, iterations: int, kills: list[tuple[int, int]]) -> int:
    """Checksum the example must print: sum over iterations of (it+1) * sum of (rank+1) over live ranks."""
    total = 0
    for it in range(iterations):
        total += (it + 1) * sum(r + 1 for r in range(np) if not any(k == r and at <= it for k, at in kills))
    return total


def run(args: argparse.Namespace) -> int:
    kills = args.kill or [(2, 5), (1, 12)]
    if args.np < 2:
        raise FtslideError("--np must be at least 2")
    if args.iterations < 1:
        raise FtslideError("--iterations must be at least 1")
    for rank, at in kills:
        if rank >= args.np or at >= args.iterations:
            raise FtslideError(f"kill {rank}@{at} is outside the run (ranks 0..{args.np - 1}, "
                               f"iterations 0..{args.iterations - 1})")
    if 0 in {rank for rank, _ in kills} or len({rank for rank, _ in kills}) >= args.np:
        raise FtslideError("the demo keeps world rank 0 alive to report: kill other ranks, and not all of them")
    prefix = require_prefix()
    binary = compile_program(prefix, [SOURCE])
    spec = ",".join(f"{rank}@iter={at}" for rank, at in kills)
    print(f"ftslide demo: {args.np} ranks, {args.iterations} iterations, SIGKILL at {spec}", flush=True)
    started = time.monotonic()
    result = mpirun(prefix, ["-np", str(args.np), str(binary), str(args.iterations)],
                    timeout=args.timeout, env={"FTSLIDE_KILL": spec})
    print(result.stdout, end="")
    summary = re.search(r"survive: done: .* (\d+) recoveries, (\d+) survivors, checksum (-?\d+), (.*)",
                        result.stdout)
    if summary is None:
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise FtslideError(f"the run did not finish (mpirun exit {result.returncode}): {tail}")
    want = expected_checksum(args.np, args.iterations, kills)
    survivors, checksum = int(summary[2]), int(summary[3])
    ok = survivors == args.np - len(kills) and checksum == want and summary[4] == "all sums correct"
    print(f"ftslide demo: {survivors} survivors, checksum {checksum} (expected {want}), "
          f"{time.monotonic() - started:.1f} s: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1
