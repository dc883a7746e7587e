"""ftslide build-mpi4py: mpi4py built against the project's Open MPI, in this environment."""

from __future__ import annotations

import argparse
import sys

from ..toolchain import pympi
from ..toolchain.ompi import require_prefix
from ..ui.progress import Progress

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "build-mpi4py"
HELP = (f"build mpi4py {pympi.MPI4PY_VERSION} against the project's Open MPI (cached per build) and install it "
        "into this environment (the project's .venv), so that Python programs get the ULFM calls; "
        "print the wheel")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options


def run(args: argparse.Namespace) -> int:
    del args
    prefix = require_prefix()
    if not pympi.installed(prefix):
        Progress("build-mpi4py").phase(f"mpi4py {pympi.MPI4PY_VERSION} against {prefix} (cached per build)")
    wheel, reused = pympi.build(prefix)
    if reused:
        print(f"reusing mpi4py {pympi.MPI4PY_VERSION} built against {prefix}", file=sys.stderr, flush=True)
    print(wheel)
    return 0
