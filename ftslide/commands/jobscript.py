"""ftslide jobscript: a Slurm, PBS Pro, Torque or Flux job script that keeps a ULFM job alive."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from ..jobmgr import jobscript
from . import Parser
from ..errors import FtslideError
from ..toolchain.ompi import require_prefix

__all__ = ["NAME", "HELP", "PASSTHROUGH", "add_arguments", "run"]

NAME = "jobscript"
HELP = ("write a Slurm, PBS Pro, Torque or Flux job script that runs 'mpirun --with-ft ulfm' from the "
        "project's Open MPI and keeps the job alive when a rank or a node dies (see docs/jobmgr.md)")

_SUBMIT = {"slurm": "sbatch", "pbs": "qsub", "torque": "qsub", "flux": "flux batch"}

# cli.main hands over the raw arguments: everything after '--' is the job's command, which
# argparse cannot take as a positional after options.
PASSTHROUGH = True


def _add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("manager", choices=jobscript.MANAGERS, metavar="MANAGER",
                        help="slurm, pbs (PBS Pro/OpenPBS), torque or flux")
    parser.add_argument("--nodes", type=int, required=True, metavar="N", help="nodes to allocate")
    parser.add_argument("--ntasks-per-node", type=int, required=True, metavar="K",
                        help="MPI processes per node; the job runs N*K of them unless the mpirun options give -np")
    parser.add_argument("--time", metavar="LIMIT", help="time limit: minutes (30), H:MM:SS or D-HH:MM:SS; default: "
                        "the manager's default")
    parser.add_argument("--name", default="ftslide", help="job name (default ftslide)")
    parser.add_argument("--queue", metavar="Q", help="partition (Slurm) or queue (PBS, Torque, Flux)")
    parser.add_argument("--job-output", metavar="PATH", help="where the job's output goes (manager's default "
                        "otherwise)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="export a variable in the script (repeatable)")
    parser.add_argument("-o", "--output", metavar="FILE", type=Path,
                        help="write the script to FILE (executable) instead of standard output")


USAGE = f"ftslide {NAME} MANAGER --nodes N --ntasks-per-node K [options] -- [mpirun options] PROGRAM [ARGS]"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = USAGE
    _add_options(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- [mpirun options] PROGRAM [ARGS]",
                        help="what the job runs, after '--'; PROGRAM is checked here and given by absolute path")


def parse(rest: list[str]) -> argparse.Namespace:
    """Options before '--', the job's command after it."""
    parser = Parser(prog=f"ftslide {NAME}", description=HELP, usage=USAGE)
    _add_options(parser)
    if "--" in rest:
        cut = rest.index("--")
        head, command = rest[:cut], rest[cut + 1:]
    else:
        head, command = rest, []
    args, extra = parser.parse_known_args(head)
    where = "ftslide jobscript MANAGER --nodes N --ntasks-per-node K -- [mpirun options] PROGRAM [ARGS]"
    if extra:
        if extra[0].startswith("-"):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        raise FtslideError(f"unexpected {extra[0]!r}: put the program after '--': {where}")
    if not command:
        raise FtslideError(f"no program given: put it after '--': {where}")
    args.command, args.argv = command, rest
    return args


def _environment(items: list[str]) -> dict[str, str]:
    env = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise FtslideError(f"--env {item!r} must be NAME=VALUE")
        env[name] = value
    return env


def run(args: argparse.Namespace) -> int:
    args = parse(list(args.rest))
    command = args.command
    request = jobscript.Request(manager=args.manager, nodes=args.nodes, ntasks_per_node=args.ntasks_per_node,
                                command=command, time=args.time, name=args.name, queue=args.queue,
                                job_output=args.job_output, environment=_environment(args.env))
    jobscript.check(request)  # bad input fails before the build is looked up
    invocation = f"ftslide {NAME} {shlex.join(args.argv)}".replace("\n", " ")
    text = jobscript.render(request, require_prefix(), invocation)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    jobscript.write(text, args.output)
    print(f"wrote {args.output}: {args.nodes} node(s) x {args.ntasks_per_node}; submit with "
          f"'{_SUBMIT[args.manager]} {args.output}'", file=sys.stderr)
    return 0
