"""ftslide run: mpirun --with-ft ulfm from the project's build, set up for one machine."""

from __future__ import annotations

import argparse
import os
import shutil

from ..jobmgr import cluster as netcluster
from ..errors import FtslideError
from ..toolchain import pympi
from ..toolchain.mpi import check_program, launch_environment, mpirun_argv, split_program
from ..toolchain.ompi import require_prefix

__all__ = ["NAME", "HELP", "PASSTHROUGH", "add_arguments", "run"]

NAME = "run"
HELP = ("run 'mpirun --with-ft ulfm [mpirun options] PROGRAM [ARGS]' with the project's Open MPI; "
        "oversubscription and running as root are allowed by default; '--cluster NAME' first runs "
        "the job across an emulated cluster of 'ftslide cluster up'")


# The arguments go to mpirun as they are (see cli.main).
PASSTHROUGH = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs=argparse.REMAINDER,
                        metavar="[--cluster NAME] [mpirun options] PROGRAM [ARGS]")


def cluster_option(rest: list[str]) -> tuple[str | None, list[str]]:
    """Take a leading ``--cluster NAME`` (or ``--cluster=NAME``) off the arguments."""
    if rest and rest[0] == "--cluster":
        if len(rest) < 2:
            raise FtslideError("--cluster needs a cluster name (see 'ftslide cluster status')")
        return rest[1], rest[2:]
    if rest and rest[0].startswith("--cluster="):
        return rest[0].split("=", 1)[1], rest[1:]
    return None, rest


def run(args: argparse.Namespace) -> int:
    prefix = require_prefix()
    name, rest = cluster_option(list(args.rest))
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
