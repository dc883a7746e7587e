"""ftslide env: shell lines that put the build's mpicc and mpirun first on PATH."""

from __future__ import annotations

import argparse
import shlex

from ..ompi_build import require_prefix

NAME = "env"
HELP = "print the shell lines that put the build's mpicc/mpirun on PATH (use: eval \"$(ftslide env)\")"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options


def run(args: argparse.Namespace) -> int:
    del args
    prefix = require_prefix()
    quoted = shlex.quote(str(prefix))
    print(f"export FTSLIDE_MPI_PREFIX={quoted}")
    print(f"export PATH={quoted}/bin:\"$PATH\"")
    print(f"export MANPATH={quoted}/share/man:\"${{MANPATH:-}}\"")
    return 0
