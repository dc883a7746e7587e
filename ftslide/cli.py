"""The ``ftslide`` command: one sub-command per module in ``ftslide/commands``.

Each command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``. User errors (FtslideError) end as one line on stderr and a
non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import select
import signal
import sys
from typing import Sequence

from . import __version__
from .commands import Parser
from .errors import FtslideError
from .toolchain.mpi import ensure_stdin
from .toolchain.native import require_checkout

DESCRIPTION = ("fault-tolerant MPI with spare-node substitution: ULFM in our Open MPI build, sliding "
               "substitution, SimGrid simulations and job-manager adapters")

# Sub-command modules under ftslide/commands, in the order --help lists them.
COMMANDS = ["doctor", "build_mpi", "build_mpi4py", "env", "run", "demo", "faults", "map", "simulate", "plan", "validate", "protocols", "cluster",
            "jobscript",
            "notify"]
# Commands that build or run what only a checkout has (the Open MPI build's sources, the example
# programs, the adapters' scripts): from an installed package they say so before anything else.
# (run and build-mpi4py need the Open MPI build only: ftslide.toolchain.ompi says the same unless
# FTSLIDE_MPI_PREFIX names one.)
CHECKOUT_ONLY = {"build-mpi", "env", "demo", "faults", "validate", "cluster", "jobscript", "notify"}


def build_parser() -> tuple[argparse.ArgumentParser, dict]:
    parser = Parser(prog="ftslide", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"ftslide {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    modules = {}
    for name in COMMANDS:
        module = importlib.import_module(f"ftslide.commands.{name}")
        cmd = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(cmd)
        modules[module.NAME] = module
    return parser, modules


def main(argv: Sequence[str] | None = None) -> int:
    # A closed stdin would let the next pipe take descriptor 0 and confuse mpirun.
    ensure_stdin()
    parser, modules = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    module = modules.get(argv[0]) if argv else None
    if module is not None and getattr(module, "PASSTHROUGH", False) and argv[1:2] not in (["-h"], ["--help"]):
        # Everything after the command name belongs to the program it wraps (mpirun).
        args = argparse.Namespace(command=argv[0], rest=argv[1:])
    else:
        args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command in CHECKOUT_ONLY:
            require_checkout(f"ftslide {args.command}")
        return modules[args.command].run(args)
    except FtslideError as exc:
        print(f"ftslide {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except MemoryError:
        print(f"ftslide {args.command}: error: out of memory: the problem is too large for this machine "
              "(a smaller grid or topology)", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"ftslide {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        if not _reader_gone(sys.stdout):
            raise
        # The reader went away (`ftslide map --json | head`): stop quietly, as a pipe's writer does,
        # and keep the interpreter's final flush from failing on the closed pipe too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


def _reader_gone(stream: object) -> bool:
    """Whether ``stream`` is a pipe whose reading end is closed (poll reports an error on it)."""
    try:
        poller = select.poll()
        poller.register(stream.fileno(), select.POLLERR)  # type: ignore[attr-defined]
        return bool(poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


if __name__ == "__main__":
    sys.exit(main())
