"""ftslide run: mpirun --with-ft ulfm from the project's build (or --mpi PREFIX), set up for one machine."""

from __future__ import annotations

import argparse
import os
import shutil

from ..jobmgr import cluster as netcluster
from ..errors import FtslideError
from ..toolchain import features, pympi
from ..toolchain.mpi import check_program, launch_environment, mpirun_argv, split_program
from ..toolchain.ompi import require_prefix

__all__ = ["NAME", "HELP", "PASSTHROUGH", "add_arguments", "run"]

NAME = "run"
HELP = ("run 'mpirun --with-ft ulfm [mpirun options] PROGRAM [ARGS]' with the project's Open MPI, or the "
        "ULFM Open MPI >= 5.0 that '--mpi PREFIX' or FTSLIDE_MPI names; oversubscription and running as root are "
        "allowed by default; '--cluster NAME' first runs the job across an emulated cluster of 'ftslide cluster up'")


# The arguments go to mpirun as they are (see cli.main).
PASSTHROUGH = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs=argparse.REMAINDER,
                        metavar="[--mpi PREFIX] [--cluster NAME] [mpirun options] PROGRAM [ARGS]")


def leading_options(rest: list[str]) -> tuple[str | None, str | None, list[str]]:
    """Take leading ``--cluster NAME`` and ``--mpi PREFIX`` (either order, ``--opt=value`` too) off
    the arguments: (cluster, mpi, the rest for mpirun)."""
    found: dict[str, str | None] = {"--cluster": None, "--mpi": None}
    hints = {"--cluster": "a cluster name (see 'ftslide cluster status')",
             "--mpi": "the prefix of an Open MPI >= 5.0 with ULFM"}
    while rest:
        option, equals, value = rest[0].partition("=")
        if option not in found:
            break
        if not equals:
            if len(rest) < 2:
                raise FtslideError(f"{option} needs {hints[option]}")
            value, rest = rest[1], rest[2:]
        else:
            rest = rest[1:]
        found[option] = value
    return found["--cluster"], found["--mpi"], rest


def run(args: argparse.Namespace) -> int:
    name, mpi, rest = leading_options(list(args.rest))
    prefix = require_prefix(mpi)
    if name is not None:  # a node of the emulated cluster dies with its daemon
        features.require(prefix, "node_loss", "ftslide run --cluster (jobs that outlive a node)")
    _, program, _ = split_program(rest)
    check_program(program)
    env = launch_environment(prefix)
    if pympi.is_python(program):  # its mpi4py must be ours, or ULFM calls quietly do something else
        pympi.require(shutil.which(program, path=env["PATH"]) or program, prefix)
    if name is None:
        argv = mpirun_argv(prefix, rest)
    else:
        cluster = netcluster.load(name)
        argv = netcluster.job_argv(cluster, mpirun_argv(prefix, rest))
        env.update(netcluster.launch_environment())
    os.execve(argv[0], argv, env)
