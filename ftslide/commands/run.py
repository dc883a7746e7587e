"""ftslide run: mpirun --with-ft ulfm from the project's build (or --mpi PREFIX), set up for one machine."""

from __future__ import annotations

import argparse
import os
import re
import shutil
from pathlib import Path

from ..jobmgr import cluster as netcluster
from ..errors import FtslideError
from ..toolchain import features, mpi, pympi
from ..toolchain.ompi import require_prefix

__all__ = ["NAME", "HELP", "PASSTHROUGH", "add_arguments", "run"]

NAME = "run"
HELP = ("run 'mpirun --with-ft ulfm [mpirun options] PROGRAM [ARGS]' with the project's Open MPI, or the "
        "ULFM Open MPI >= 5.0 that '--mpi PREFIX' or FTSLIDE_MPI names; oversubscription and running as root are "
        "allowed by default; '--cluster NAME' first runs the job across an emulated cluster of 'ftslide cluster up'; "
        "with an MPI found to hang in MPI_Finalize after failures ('ftslide doctor'), or with '--result-line REGEX', "
        f"a job still there {mpi.FINALIZE_GRACE:g} s after its result line (REGEX; default: the runtime examples' "
        "'NAME: done ... checksum=0x...') is ended, with one line saying why (stdin is then not forwarded)")


# The arguments go to mpirun as they are (see cli.main).
PASSTHROUGH = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs=argparse.REMAINDER,
                        metavar="[--mpi PREFIX] [--cluster NAME] [--result-line REGEX] [mpirun options] PROGRAM [ARGS]")


def leading_options(rest: list[str]) -> tuple[str | None, str | None, str | None, list[str]]:
    """Take leading ``--cluster NAME``, ``--mpi PREFIX`` and ``--result-line REGEX`` (any order,
    ``--opt=value`` too) off the arguments: (cluster, mpi, result line, the rest for mpirun)."""
    found: dict[str, str | None] = {"--cluster": None, "--mpi": None, "--result-line": None}
    hints = {"--cluster": "a cluster name (see 'ftslide cluster status')",
             "--mpi": "the prefix of an Open MPI >= 5.0 with ULFM",
             "--result-line": "a regular expression matching the line the program prints when its work is done"}
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
    return found["--cluster"], found["--mpi"], found["--result-line"], rest


def finalize_watch(prefix: Path, result_line: str | None) -> mpi.ResultWatch | None:
    """The watch of a job run with ``prefix``: on ``--result-line``'s line when given, else the one
    every launch of that MPI gets (on for an MPI found to hang in MPI_Finalize after failures)."""
    if result_line is None:
        return mpi.default_watch(prefix)
    try:
        return mpi.ResultWatch(re.compile(result_line))
    except re.error as exc:
        raise FtslideError(f"--result-line {result_line!r} is no regular expression: {exc}") from None


def run(args: argparse.Namespace) -> int:
    name, mpi_prefix, result_line, rest = leading_options(list(args.rest))
    prefix = require_prefix(mpi_prefix)
    watch = finalize_watch(prefix, result_line)
    if name is not None:  # a node of the emulated cluster dies with its daemon
        features.require(prefix, "node_loss", "ftslide run --cluster (jobs that outlive a node)")
    _, program, _ = mpi.split_program(rest)
    mpi.check_program(program)
    env = mpi.launch_environment(prefix)
    if pympi.is_python(program):  # its mpi4py must be ours, or ULFM calls quietly do something else
        pympi.require(shutil.which(program, path=env["PATH"]) or program, prefix)
    cluster = netcluster.load(name) if name is not None else None
    if watch is not None:
        # Watched: mpirun runs as our child (stdin /dev/null), its output passed on as it comes;
        # once the result line is out, the job gets the watch's grace to end.
        result = mpi.run(prefix, rest, env=netcluster.launch_environment() if cluster else None,
                         wrap=(lambda argv: netcluster.job_argv(cluster, argv)) if cluster else None,
                         watch=watch, echo=True)
        return result.returncode if result.returncode >= 0 else 128 - result.returncode
    argv = mpi.mpirun_argv(prefix, rest)
    if cluster is not None:
        argv = netcluster.job_argv(cluster, argv)
        env.update(netcluster.launch_environment())
    os.execve(argv[0], argv, env)
