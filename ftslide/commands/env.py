"""ftslide env: shell lines that put the build's mpicc and mpirun first on PATH and name libsliding."""

from __future__ import annotations

import argparse
import shlex

from ..toolchain.ompi import require_prefix
from ..sliding.runtime import HEADER_DIR, build_library, link_flags

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "env"
HELP = ("print the shell lines that put the build's mpicc/mpirun on PATH and set SLIDING_CFLAGS/SLIDING_LIBS "
        "for linking libsliding (C, and Fortran with sliding/fortran) and SLIDING_LIBRARY for its Python binding "
        "(use: eval \"$(ftslide env)\")")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options


def run(args: argparse.Namespace) -> int:
    del args
    prefix = require_prefix()
    quoted = shlex.quote(str(prefix))
    print(f"export FTSLIDE_MPI_PREFIX={quoted}")
    print(f"export PATH={quoted}/bin:\"$PATH\"")
    print(f"export MANPATH={quoted}/share/man:\"${{MANPATH:-}}\"")
    library = build_library(prefix)
    print(f"export SLIDING_CFLAGS={shlex.quote(f'-I{HEADER_DIR}')}")
    print(f"export SLIDING_LIBS={shlex.quote(' '.join(link_flags(library)))}")
    print(f"export SLIDING_LIBRARY={shlex.quote(str(library))}")
    return 0
