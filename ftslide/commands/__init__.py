"""Sub-commands of the ftslide CLI (see ftslide/cli.py), and the argument parser they share."""

from __future__ import annotations

import argparse
from typing import NoReturn

__all__ = ["Parser", "add_block_options"]


class Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line naming the fix."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def add_block_options(parser: argparse.ArgumentParser, ranks_help: str, default: int = 1) -> None:
    """--ranks-per-node K (``ranks_help`` says what K means to this command) and --block, the block of the
    rank grid a node runs; both are checked where they are used (sliding.core.make_block)."""
    parser.add_argument("--ranks-per-node", type=int, default=default, metavar="K", help=ranks_help)
    parser.add_argument("--block", metavar="AxB[xC]",
                        help="with --ranks-per-node: the block of ranks a node runs, sizes multiplying to K "
                        "(default: the most even split, 2 -> 2x1x1, 4 -> 2x2x1)")
