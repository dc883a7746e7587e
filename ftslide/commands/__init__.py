"""Sub-commands of the ftslide CLI (see ftslide/cli.py), and the argument parser they share."""

from __future__ import annotations

import argparse
from typing import NoReturn

__all__ = ["Parser"]


class Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line naming the fix."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")
