"""ftslide run: mpirun --with-ft ulfm from the project's build, set up for one machine."""

from __future__ import annotations

import argparse
import os

from ..mpi import check_program, launch_environment, mpirun_argv, split_program
from ..ompi_build import require_prefix

NAME = "run"
HELP = ("run 'mpirun --with-ft ulfm [mpirun options] PROGRAM [ARGS]' with the project's Open MPI; "
        "oversubscription and running as root are allowed by default")


# The arguments go to mpirun as they are (see cli.main).
PASSTHROUGH = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs=argparse.REMAINDER, metavar="[mpirun options] PROGRAM [ARGS]")


def run(args: argparse.Namespace) -> int:
    prefix = require_prefix()
    _, program, _ = split_program(args.rest)
    check_program(program)
    argv = mpirun_argv(prefix, args.rest)
    os.execve(argv[0], argv, launch_environment(prefix))
