"""Named kill points for Python MPI programs: the FTSLIDE_KILL convention of
ompi-ulfm/include/ftslide_killpoint.h.

A program marks where a test may kill it::

    from ftslide_killpoint import killpoint
    killpoint(rank, "after_barrier")
    killpoint(rank, f"iter={it}")

and the test names the victims in the environment, ``FTSLIDE_KILL="2@iter=5,3@after_barrier"``.
A rank that reaches a point named for it prints ``ftslide: rank R killed at P`` on stderr and
sends itself SIGKILL: it dies at once, with nothing flushed or closed but that line, as if killed
from outside. FTSLIDE_KILL is read once. As in C, ``FTSLIDE_KILL_NODE=1`` kills the parent (the
node's daemon) first and ``FTSLIDE_KILL_LOG=FILE`` appends the line to FILE too.
"""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["killpoint"]

_VICTIMS: frozenset[str] | None = None


def killpoint(rank: int, point: str) -> None:
    """SIGKILL this process when FTSLIDE_KILL names ``RANK@POINT``; otherwise return at once."""
    global _VICTIMS
    if _VICTIMS is None:
        _VICTIMS = frozenset(entry for entry in os.environ.get("FTSLIDE_KILL", "").split(",") if entry)
    if f"{rank}@{point}" not in _VICTIMS:
        return
    line = f"ftslide: rank {rank} killed at {point}\n"
    sys.stdout.flush()
    sys.stderr.write(line)
    sys.stderr.flush()
    log = os.environ.get("FTSLIDE_KILL_LOG")
    if log:
        try:
            with open(log, "a") as handle:
                handle.write(line)
        except OSError:
            pass  # the process dies next either way
    if os.environ.get("FTSLIDE_KILL_NODE") == "1":
        os.kill(os.getppid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
