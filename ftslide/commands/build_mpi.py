"""ftslide build-mpi: build or reuse the project's Open MPI (ULFM) and print its prefix."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import FtslideError
from ..toolchain.ompi import build

__all__ = ["NAME", "HELP", "add_arguments", "run"]

NAME = "build-mpi"
HELP = "build Open MPI 5.0.x with ULFM and our overlays into a cached prefix (or reuse it) and print the prefix"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tarball", type=Path, help="an upstream Open MPI 5.0.x tarball to build instead "
                        "of the pinned Debian source (needs --sha256)")
    parser.add_argument("--sha256", help="the tarball's sha256; the build stops if it does not match")
    parser.add_argument("-j", "--jobs", type=int, help="parallel make jobs (default: number of cores)")


def run(args: argparse.Namespace) -> int:
    if args.jobs is not None and args.jobs < 1:
        raise FtslideError("--jobs must be at least 1")
    prefix, reused = build(args.tarball, args.sha256, args.jobs)
    if reused:
        print(f"reusing {prefix} (inputs unchanged)", file=sys.stderr, flush=True)
    print(prefix)
    return 0
